"""Start moto's server on a free loopback port and build the environment the CDK CLI runs in.

The CDK CLI v2 uses the AWS SDK for JavaScript v3, whose endpoint resolution reads
``AWS_ENDPOINT_URL`` (and ``AWS_ENDPOINT_URL_<SERVICE>``) from the environment
(``@smithy/core`` ``getEndpointUrlConfig``, bundled in ``aws-cdk/lib/index.js``). The CLI builds
the ``TemplateURL`` it hands to CloudFormation from ``AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION``
(``restUrlFromManifest`` in the same file); moto reads a template URL path-style only when its
host says ``localhost``, so that variable names ``localhost``. Credentials are dummies, the
shared config and credential files are empty and the instance metadata service is off, so
nothing can fall back to a real account.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from moto.server import ThreadedMotoServer

ACCOUNT = "123456789012"
REGION = "us-west-2"

#: Variables the CDK CLI (or a boto3 client in the test process) would read an AWS endpoint,
#: credentials or profile from; every one is set or cleared here.
CLEARED = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CA_BUNDLE",
)


class NotLoopbackError(AssertionError):
    """An endpoint the rehearsal would call is not on this machine."""


def assert_loopback(url: str) -> None:
    """Fail unless ``url``'s host is ``localhost`` or a loopback address."""
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise NotLoopbackError(f"endpoint {url!r} is not loopback: the rehearsal never calls real AWS")


def assert_all_endpoints_loopback(env: Mapping[str, str]) -> None:
    """Every ``*ENDPOINT*`` variable in ``env`` points at loopback, and the SDK's endpoint
    resolution is not told to ignore them."""
    endpoints = {key: value for key, value in env.items() if "ENDPOINT" in key.upper()}
    if "AWS_ENDPOINT_URL" not in endpoints:
        raise NotLoopbackError("AWS_ENDPOINT_URL is not set: the SDK would call real AWS")
    if env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        raise NotLoopbackError("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true would bypass the endpoint")
    for _key, value in endpoints.items():
        if value.startswith(("http://", "https://")):
            assert_loopback(value)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class LocalAws:
    """A running local AWS: its endpoint, account and region."""

    endpoint: str
    account: str = ACCOUNT
    region: str = REGION

    def environment(self, home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a CDK CLI (or boto3) process that may reach only this server.
        ``home`` receives empty AWS config and credential files."""
        env = dict(os.environ if base is None else base)
        for key in list(env):
            if key in CLEARED or key.startswith("AWS_ENDPOINT_URL"):
                del env[key]
        home.mkdir(parents=True, exist_ok=True)
        (home / "config").write_text("")
        (home / "credentials").write_text("")
        port = urlparse(self.endpoint).port
        env.update(
            {
                "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION": f"http://localhost:{port}",
                "AWS_ACCESS_KEY_ID": "rehearsal",
                "AWS_SECRET_ACCESS_KEY": "rehearsal",
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_CONFIG_FILE": str(home / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
                "AWS_EC2_METADATA_DISABLED": "true",
                "CDK_DISABLE_VERSION_CHECK": "true",
                "CDK_DISABLE_CLI_TELEMETRY": "true",
                "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
            }
        )
        assert_all_endpoints_loopback(env)
        return env


def start() -> tuple[ThreadedMotoServer, LocalAws]:
    """Start moto's server in this process (so the extensions installed here apply to it) on
    a free loopback port."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    local = LocalAws(endpoint=f"http://127.0.0.1:{port}")
    assert_loopback(local.endpoint)
    return server, local
