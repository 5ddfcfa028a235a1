"""SSH between the launcher and node pods of an MPI TrainJob, in a form OpenSSH accepts.

Kubeflow Trainer generates one key per TrainJob (an EC P-521 key in PEM) and mounts its Secret at
the runtime's ``sshAuthMountPath`` in every container named ``node``: ``id_rsa`` with mode 0640,
``id_rsa.pub`` and ``authorized_keys`` with mode 0644, anything else 0400, all owned by root
(kubeflow/trainer v2.3.0 ``pkg/constants/constants.go`` ``MPISSH*``,
``pkg/runtime/framework/plugins/mpi/mpi.go`` ``buildSSHAuthSecret`` and the Secret volume). Its
own runtimes run as uid 1000 with an fsGroup, so the key belongs to another user and OpenSSH does
not check its mode. The nccl-tests image runs as root: the key is then the caller's own and
group-readable, and ``ssh`` ignores it ("UNPROTECTED PRIVATE KEY FILE").

So both pods start by copying what they need into a private directory (0700, files 0600) and
name it explicitly, independent of the image's ``/etc/ssh`` files and of root's home:

* the launcher copies the private key and writes an ``ssh_config`` used through ``-F`` by the
  wait loop and by ``mpirun`` (``plm_rsh_args``);
* each node copies ``authorized_keys``, makes a host key when it has none and runs ``sshd`` with
  its own configuration (``StrictModes yes``, keys only).
"""

from __future__ import annotations

import shlex

#: Where Trainer mounts the TrainJob's SSH Secret (the runtime's ``sshAuthMountPath``).
MOUNT_PATH = "/etc/mpi-ssh-auth"
#: The private copy both pods use (root-owned parents that are not group or world writable,
#: which sshd's StrictModes asks of every directory above ``authorized_keys``).
PRIVATE_DIR = "/run/fm-mpi-ssh"
SSH_PORT = 22
SSHD = "/usr/sbin/sshd"
#: What Trainer sets in ``OMPI_MCA_plm_rsh_args`` (constants.go
#: ``OpenMPIEnvDefaultValueRSHArgs``); kept when the launcher passes its own config.
TRAINER_RSH_ARGS = "-o ConnectionAttempts=10"
#: The privilege-separation directory Debian and Ubuntu builds of sshd require.
PRIVSEP_DIR = "/run/sshd"


def client_config(private_dir: str = PRIVATE_DIR) -> str:
    return f"{private_dir}/ssh_config"


def _write_lines(path: str, lines: list[str]) -> str:
    return f"printf '%s\\n' {shlex.join(lines)} > {shlex.quote(path)}"


def launcher_setup(
    mount_path: str = MOUNT_PATH, private_dir: str = PRIVATE_DIR, port: int = SSH_PORT
) -> str:
    """Shell: the launcher's private key (0600) and its ssh client configuration."""
    key = f"{private_dir}/id_rsa"
    config = [
        "Host *",
        f"  Port {port}",
        f"  IdentityFile {key}",
        "  IdentitiesOnly yes",
        "  BatchMode yes",
        "  StrictHostKeyChecking no",
        "  UserKnownHostsFile /dev/null",
        "  LogLevel ERROR",
        "  ConnectTimeout 5",
    ]
    return (
        "umask 077; "
        f"install -d -m 0700 {shlex.quote(private_dir)}; "
        f"install -m 0600 {shlex.quote(mount_path + '/id_rsa')} {shlex.quote(key)}; "
        f"{_write_lines(client_config(private_dir), config)}"
    )


def rsh_args(private_dir: str = PRIVATE_DIR) -> str:
    """What ``mpirun`` passes to ``ssh`` when it starts the remote daemons."""
    return f"-F {client_config(private_dir)} {TRAINER_RSH_ARGS}"


def wait_for_nodes(
    hostfile: str, *, seconds: int, private_dir: str = PRIVATE_DIR, interval: int = 5
) -> str:
    """Shell: wait until every host of ``hostfile`` accepts ssh; on timeout name the host and
    print what ssh said on the last try (unknown name, refused, key refused...)."""
    tries = max(1, seconds // interval)
    config = shlex.quote(client_config(private_dir))
    return (
        "while read -r host _; do "
        '[ -n "$host" ] || continue; '
        "n=0; "
        f'until why=$(ssh -F {config} -n "$host" true 2>&1); do '
        f'n=$((n+1)); if [ "$n" -ge {tries} ]; then '
        f'echo "node $host does not accept ssh after {seconds} s: ${{why:-no answer}}" >&2; '
        f"exit 1; fi; sleep {interval}; "
        f'done; done < "{hostfile}"'
    )


def node_start(
    mount_path: str = MOUNT_PATH,
    private_dir: str = PRIVATE_DIR,
    port: int = SSH_PORT,
    *,
    sshd: str = SSHD,
) -> str:
    """Shell: a node's ``authorized_keys`` (0600), a host key, and sshd in the foreground."""
    host_key = f"{private_dir}/ssh_host_ed25519_key"
    config = [
        f"Port {port}",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {private_dir}/authorized_keys",
        "StrictModes yes",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "PidFile none",
    ]
    q = shlex.quote
    keys = f"{q(mount_path + '/authorized_keys')} {q(private_dir + '/authorized_keys')}"
    return (
        "set -eu; umask 077; "
        f"install -d -m 0700 {q(private_dir)}; "
        f"install -m 0600 {keys}; "
        f"[ -s {q(host_key)} ] || ssh-keygen -q -t ed25519 -N '' -f {q(host_key)}; "
        f"install -d -m 0755 {PRIVSEP_DIR}; "
        f"{_write_lines(private_dir + '/sshd_config', config)}; "
        f"exec {q(sshd)} -D -e -f {q(private_dir + '/sshd_config')}"
    )
