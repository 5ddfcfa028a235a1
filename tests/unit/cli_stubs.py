"""Helpers for CLI tests: fake credentials, stubbed boto3 clients, profiles on disk.

Every AWS client the CLI makes is replaced by a real botocore client wrapped in an activated
Stubber, so a call without a queued response fails instead of reaching AWS.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fm_constructs.cli import aws
from fm_constructs.cli.main import main

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PROFILE = str(REPO / "config" / "default.toml")


def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials and region that cannot reach any real account; no config files read."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@functools.cache
def _shared_session() -> boto3.session.Session:
    """One session for every stubbed client: it loads each service model once per process
    (EC2's alone takes a noticeable fraction of a second), while each client and its
    Stubber stay private to one test."""
    return boto3.session.Session()


@dataclass
class Stubs:
    """One activated Stubber per service; ``client(service)`` of the CLI returns these."""

    region: str = "us-east-1"
    clients: dict[str, Any] = field(default_factory=dict)
    stubbers: dict[str, Stubber] = field(default_factory=dict)

    def __getitem__(self, service: str) -> Stubber:
        if service not in self.stubbers:
            client = _shared_session().client(service, region_name=self.region)
            stubber = Stubber(client)
            stubber.activate()
            self.clients[service] = client
            self.stubbers[service] = stubber
        return self.stubbers[service]

    def client(self, service: str) -> Any:
        self[service]
        return self.clients[service]

    def assert_done(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubs]:
    fake_credentials(monkeypatch)
    stubs = Stubs()
    monkeypatch.setattr(aws.AwsSession, "client", lambda self, service: stubs.client(service))
    yield stubs
    for stubber in stubs.stubbers.values():
        stubber.deactivate()


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(*argv: str) -> Result:
    """``fmc argv`` in-process, capturing stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


def write_profile(tmp_path: Path, text: str, name: str = "profile.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


PLATFORM = """
[platform]
name = "t"
region = "us-east-1"
availability_zone = "us-east-1a"
availability_zones = ["us-east-1a", "us-east-1b"]
"""
