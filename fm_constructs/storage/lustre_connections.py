"""The security-group side of a Lustre file system, shared by the created and the imported
one: which ports Lustre clients need, and an ``ec2.Connections`` that opens all of them."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Names
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

#: Lustre LNet port and the range the Lustre servers also listen on.
LUSTRE_PORTS: tuple[ec2.Port, ...] = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))


def _allow(
    source: ec2.ISecurityGroup, target: ec2.ISecurityGroup, port: ec2.Port, description: str
) -> None:
    """Let ``source`` reach ``target`` on ``port``: ingress on the target, and egress on the
    source only where its egress is restricted (an all-outbound group needs none, and CDK
    warns when one is added).

    Rules are "remote": when the groups live in different stacks, CDK puts the rule in the
    source's stack, so a consumer stack (nodes) depends on the provider stack (file system) and
    never the other way round.
    """
    target.add_ingress_rule(source, port, description, True)
    if not source.allow_all_outbound:
        source.add_egress_rule(target, port, description, True)


def _explicit_egress(
    scope: Construct, source: ec2.ISecurityGroup, target: ec2.ISecurityGroup, description: str
) -> None:
    """All-traffic egress from ``source`` to ``target`` as its own rule resource, whatever
    ``source.allow_all_outbound`` claims (CDK drops egress rules on groups that claim it, and
    an imported group's real egress may be restricted). FSx checks these rules when it creates
    an EFA-enabled file system ("all inbound and outbound traffic to and from the security
    group itself and the security group of the clients")."""
    construct_id = f"EfaEgressTo{Names.node_unique_id(target.node)}"
    if scope.node.try_find_child(construct_id) is not None:
        return
    ec2.CfnSecurityGroupEgress(
        scope,
        construct_id,
        group_id=source.security_group_id,
        ip_protocol="-1",
        destination_security_group_id=target.security_group_id,
        description=description,
    )


class LustreConnections(ec2.Connections):
    """``ec2.Connections`` whose default-port helpers open *every* port Lustre clients need.

    A ``Connections`` has a single default port, but Lustre needs TCP 988 and 1018-1023 (and,
    on an EFA-enabled file system, all traffic both ways). ``allow_default_port_from``,
    ``allow_default_port_internally`` and ``allow_default_port_from_any_ipv4`` are overridden to
    open all of them. The reverse call from the client side,
    ``nodes.connections.allow_default_port_to(fs)``, goes through the client's own Connections
    and opens only 988: call ``fs.connections.allow_default_port_from(nodes)`` (or
    ``fs.allow_clients(nodes)``) instead.
    """

    def __init__(
        self,
        *,
        security_groups: Sequence[ec2.ISecurityGroup],
        efa_enabled: bool,
        explicit_egress_scope: Construct | None = None,
    ) -> None:
        super().__init__(security_groups=list(security_groups), default_port=LUSTRE_PORTS[0])
        self._efa_enabled = efa_enabled
        #: Groups passed in (``security_group=``) may restrict egress whatever their
        #: ``allow_all_outbound`` says: EFA's egress rules are then written explicitly, as
        #: resources under this scope (the file system's construct).
        self._egress_scope = explicit_egress_scope

    def allow_default_port_from(
        self, other: ec2.IConnectable, description: str | None = None
    ) -> None:
        clients = other.connections.security_groups
        if not clients:  # a CIDR or prefix-list peer: plain rules on our groups
            for port in LUSTRE_PORTS:
                self.allow_from(other, port, description or "Lustre clients")
            return
        for client in clients:
            for server in self.security_groups:
                for port in LUSTRE_PORTS:
                    _allow(client, server, port, description or "Lustre clients")
                if self._efa_enabled:
                    all_traffic = ec2.Port.all_traffic()
                    _allow(client, server, all_traffic, description or "EFA from clients")
                    # Ingress on the client's own group, kept in the client's stack.
                    client.add_ingress_rule(server, all_traffic, description or "EFA to clients")
                    if self._egress_scope is not None:
                        _explicit_egress(self._egress_scope, server, client, "EFA to clients")

    def allow_default_port_internally(self, description: str | None = None) -> None:
        ports = [*LUSTRE_PORTS, ec2.Port.all_traffic()] if self._efa_enabled else LUSTRE_PORTS
        for group in self.security_groups:
            for port in ports:
                _allow(group, group, port, description or "Lustre servers")
            if self._efa_enabled and self._egress_scope is not None:
                _explicit_egress(self._egress_scope, group, group, "EFA between Lustre servers")

    def allow_default_port_from_any_ipv4(self, description: str | None = None) -> None:
        for port in LUSTRE_PORTS:
            self.allow_from_any_ipv4(port, description or "Lustre clients (any IPv4)")
