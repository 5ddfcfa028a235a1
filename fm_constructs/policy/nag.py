"""cdk-nag (v3, Validations plugin API) wiring.

Findings fail synthesis. Constructs acknowledge the findings they cause, at the narrowest
scope, with a reason, through :func:`acknowledge`.
"""

from __future__ import annotations

import jsii
from aws_cdk import Acknowledgment, App, Aspects, IAspect, Stage, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import Construct, IConstruct

from fm_constructs.policy.checkov import CheckovHandlerAcknowledgements
from fm_constructs.policy.construct_ids import object_id
from fm_constructs.policy.lambda_concurrency import LambdaConcurrencyReasons
from fm_constructs.policy.log_encryption import EncryptLogGroups


def enable_nag(app: App) -> None:
    """Run the AwsSolutions rule pack over every stack of ``app`` when it synthesizes, and
    the guard aspects (:class:`LambdaConcurrencyReasons`, :class:`EncryptLogGroups`,
    :class:`CheckovHandlerAcknowledgements`)."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    guards = GuardAspects(
        app, LambdaConcurrencyReasons(), EncryptLogGroups(), CheckovHandlerAcknowledgements()
    )
    Aspects.of(Construct(app, GUARDS_ID)).add(guards)


#: Construct id, at the root of the app, of the one construct the guard aspects are applied to.
GUARDS_ID = "FmGuardAspects"


@jsii.implements(IAspect)
class GuardAspects:
    """Several aspects applied to every construct of ``root``, one construct after the other
    in the order of the tree, each construct to all aspects in the order given (the same order
    and effect as adding them to ``root`` one by one).

    The CDK would call an aspect of ``root`` once per construct, from its JavaScript into
    Python; this one is applied to a single construct without children (:data:`GUARDS_ID`),
    so the CDK calls it once, when it invokes the aspects at synthesis, and it visits the
    constructs of ``root`` itself from one list (``find_all``). Like aspects, it does not
    cross into a nested Stage, which synthesizes with aspects of its own. Unlike them, it sees
    the tree as it stands when its construct, the app's last child, is visited: a construct
    that an aspect of the project adds after that is not visited (the library's own aspects
    add none)."""

    def __init__(self, root: IConstruct, *aspects: IAspect) -> None:
        self._root = root
        self._aspects = list(aspects)

    def visit(self, node: IConstruct) -> None:
        for construct in _aspect_scope(self._root):
            for aspect in self._aspects:
                aspect.visit(construct)


def _aspect_scope(root: IConstruct) -> list[IConstruct]:
    """The constructs of ``root`` (itself included, in pre-order) that an aspect added to
    ``root`` visits: all but those inside a nested Stage."""
    everything = root.node.find_all()
    stages = [c for c in everything[1:] if isinstance(c, Stage)]
    if not stages:
        return everything
    inside = {object_id(c) for stage in stages for c in stage.node.find_all()}
    return [c for c in everything if object_id(c) not in inside]


def add_guard_aspect(app: App, aspect: IAspect) -> None:
    """Add ``aspect`` to ``app``: into its :class:`GuardAspects` when :func:`enable_nag`
    added them (each construct then visited by both in one walk, in the same order as two
    aspects added one after the other), else as an aspect of its own."""
    holder = app.node.try_find_child(GUARDS_ID)
    applied = Aspects.of(holder).all if holder is not None else []
    guards = applied[-1] if applied else None
    if isinstance(guards, GuardAspects):
        guards._aspects.append(aspect)
    else:
        Aspects.of(app).add(aspect)


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (``"AwsSolutions-IAM5[Resource::*]"`` or a bare
    rule id) on ``scope`` and its children, recording why it is acceptable."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule_id} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
