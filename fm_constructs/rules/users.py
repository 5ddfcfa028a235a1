"""Rules on the users of a Slurm cluster (:class:`~fm_constructs.domain.users.ClusterUser`).

Every node creates the same accounts, so a name or id that the node image already uses, or
that two users share, would give files on the shared file system to the wrong person; such a
profile is refused when it loads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fm_constructs.domain.users import ClusterUser
from fm_constructs.rules.findings import Finding, Severity, rule

#: Login names useradd accepts on Ubuntu (its default NAME_REGEX, without the trailing '$'
#: of machine accounts), at most 32 characters.
NAME_PATTERN = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
#: User and group ids a profile may give: Debian policy leaves 1000-59999 to dynamically
#: allocated accounts (section 9.2.2); the AMI's ubuntu user is 1000, and accounts created on
#: a node later (Session Manager's ssm-user) take the next free id above it, so the cluster's
#: users start at 2000.
ID_RANGE = (2000, 59999)
#: Accounts of the HyperPod Slurm image and of the services the lifecycle scripts run.
RESERVED_NAMES = frozenset(
    {
        "root",
        "daemon",
        "bin",
        "sys",
        "sync",
        "games",
        "man",
        "lp",
        "mail",
        "news",
        "uucp",
        "proxy",
        "www-data",
        "backup",
        "list",
        "irc",
        "gnats",
        "nobody",
        "messagebus",
        "syslog",
        "sshd",
        "lxd",
        "ubuntu",
        "ssm-user",
        "slurm",
        "munge",
        "mysql",
        "docker",
    }
)


def _reserved(name: str) -> bool:
    return name in RESERVED_NAMES or name.startswith(("systemd-", "_"))


@rule(
    "FM330",
    "A cluster user's name, uid, gid or group is malformed, out of range, or one the node "
    "image already has.",
    "Use a lower-case login name the image does not have, ids from 2000 to 59999, and group "
    "names of the same form.",
)
def user_entries(users: Sequence[ClusterUser], *, key: str = "users") -> list[Finding]:
    """Each user on its own: name form, reserved names, id ranges, group names."""
    out: list[Finding] = []
    low, high = ID_RANGE

    def add(path: str, value: object, allowed: str, fix: str = "") -> None:
        out.append(Finding("FM330", Severity.ERROR, path, value, allowed, fix))

    for index, user in enumerate(users):
        at = f"{key}[{index}]"
        if not NAME_PATTERN.fullmatch(user.name):
            add(
                f"{at}.name",
                user.name,
                "must be a login name: a lower-case letter or '_', then lower-case letters, "
                "digits, '_' or '-', at most 32 characters",
            )
        elif _reserved(user.name):
            add(
                f"{at}.name",
                user.name,
                "is an account of the node image or of a service on it",
                "choose another name (the image's ubuntu user gets a shared home and SSH key "
                "on its own)",
            )
        for field_name, value in (("uid", user.uid), ("gid", user.gid)):
            if value is not None and not low <= value <= high:
                add(
                    f"{at}.{field_name}",
                    value,
                    f"must be {low} to {high} (ids below are the image's and its services')",
                )
        for group in user.groups:
            if not NAME_PATTERN.fullmatch(group):
                add(f"{at}.groups", group, "must hold group names of the login-name form")
        if len(set(user.groups)) != len(user.groups):
            add(f"{at}.groups", list(user.groups), "must not name a group twice")
    return out


@rule(
    "FM331",
    "Two cluster users share a name, a uid or a primary group id.",
    "Give every user its own name, uid and gid.",
)
def users_distinct(users: Sequence[ClusterUser], *, key: str = "users") -> list[Finding]:
    """Names, uids and primary group ids are each one user's (a user's primary group is named
    after it, so two users cannot share its id)."""
    out: list[Finding] = []
    seen: dict[tuple[str, object], int] = {}
    for index, user in enumerate(users):
        for field_name, value in (
            ("name", user.name),
            ("uid", user.uid),
            ("gid", user.primary_gid),
        ):
            first = seen.setdefault((field_name, value), index)
            if first != index:
                out.append(
                    Finding(
                        "FM331",
                        Severity.ERROR,
                        f"{key}[{index}].{field_name}",
                        value,
                        f"is already used by {key}[{first}] ({users[first].name})",
                        "give each user its own name, uid and gid",
                    )
                )
    return out


def check_users(users: Sequence[ClusterUser], *, key: str = "users") -> list[Finding]:
    """Every finding of ``users``: each entry, then the entries together."""
    return user_entries(users, key=key) + users_distinct(users, key=key)
