"""The read-only registry client against real registries on loopback."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from envcheck.image.platforms import Platform, host_platform
from envcheck.image.reference import parse_reference
from envcheck.registry.auth import is_loopback, parse_challenge, realm_refusal
from envcheck.registry.documents import parse_distribution
from envcheck.registry.errors import (
    ManifestNotFound,
    RegistryAuthRequired,
    RegistryError,
    RegistryUnavailable,
)
from envcheck.registry.http.client import RegistryClient
from tests.conftest import BUSYBOX_CUDA, LocalRegistry
from tests.registry_push import push_index, push_random_image
from tests.servers import TrickleServer, free_port

AMD64 = Platform("linux", "amd64")


def client_for(ref: str) -> tuple[RegistryClient, Any]:
    parsed = parse_reference(ref)
    return RegistryClient.for_reference(parsed, timeout=5), parsed


def test_parse_docker_hub_challenge() -> None:
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:paddlepaddle/paddle:pull"'
    )
    assert scheme == "bearer"
    assert params == {
        "realm": "https://auth.docker.io/token",
        "service": "registry.docker.io",
        "scope": "repository:paddlepaddle/paddle:pull",
    }
    assert parse_challenge('Basic realm="envcheck-test"') == ("basic", {"realm": "envcheck-test"})


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1:5000", True),
        ("127.3.2.1", True),
        ("localhost:5000", True),
        ("[::1]:5000", True),
        ("registry-1.docker.io", False),
        ("10.0.0.1:5000", False),
        ("ccr-x.bj.baidubce.com", False),
    ],
)
def test_only_loopback_registries_get_plain_http(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert RegistryClient(host, host).base.startswith("http://" if loopback else "https://")


def test_host_platform_names() -> None:
    assert host_platform("x86_64") == Platform("linux", "amd64")
    assert host_platform("aarch64") == Platform("linux", "arm64", "v8")


@pytest.mark.registry
def test_inspect_reads_digest_size_and_cuda_env(registry: LocalRegistry) -> None:
    client, ref = client_for(registry.ref(BUSYBOX_CUDA))
    remote = client.inspect(ref, AMD64)
    assert remote.digest.startswith("sha256:") and len(remote.digest) == 71
    assert remote.platforms == (AMD64,)
    assert remote.env["CUDA_VERSION"] == "12.9.1"
    assert remote.size and remote.size == sum(s for _, s in remote.layers) + remote.size - sum(
        s for _, s in remote.layers
    )
    assert len(remote.layers) == 1
    # Asking by digest gets the same document, whose bytes must hash to it.
    again = client.inspect(ref.with_digest(remote.digest), AMD64)
    assert again.digest == remote.digest and again.env == remote.env


@pytest.mark.registry
def test_index_platforms_and_a_missing_one(registry: LocalRegistry) -> None:
    repo = f"envcheck-test/index-{uuid.uuid4().hex[:8]}"
    arm = push_random_image(
        registry.url, repo, "arm", layers=1, layer_size=1024, architecture="arm64"
    )
    amd = push_random_image(
        registry.url, repo, "amd", layers=1, layer_size=1024, env={"CUDA_VERSION": "13.0.1"}
    )
    push_index(registry.url, repo, "both", [(arm, "linux", "arm64"), (amd, "linux", "amd64")])
    push_index(registry.url, repo, "arm-only", [(arm, "linux", "arm64")])
    client, _ = client_for(registry.ref(f"{repo}:both"))
    both = client.inspect(parse_reference(registry.ref(f"{repo}:both")), AMD64)
    assert set(both.platforms) == {Platform("linux", "arm64"), AMD64}
    assert both.env["CUDA_VERSION"] == "13.0.1"  # the amd64 manifest's config was read
    assert both.layers == amd.layers
    arm_only = client.inspect(parse_reference(registry.ref(f"{repo}:arm-only")), AMD64)
    assert arm_only.platforms == (Platform("linux", "arm64"),)
    assert arm_only.size is None and arm_only.layers == ()


@pytest.mark.registry
def test_missing_tag_is_not_found(registry: LocalRegistry) -> None:
    client, ref = client_for(registry.ref("envcheck-test/busybox:no-such-tag"))
    with pytest.raises(ManifestNotFound) as info:
        client.inspect(ref, AMD64)
    assert info.value.status == 2
    assert "layers" in client.tags("envcheck-test/busybox")


@pytest.mark.registry
def test_htpasswd_registry_asks_for_a_login(registry_factory: Callable[..., Any]) -> None:
    locked = registry_factory(auth=True)
    client, ref = client_for(f"{locked.addr}/envcheck-test/busybox:1")
    with pytest.raises(RegistryAuthRequired) as info:
        client.inspect(ref, AMD64)
    assert info.value.status == 4
    assert f"docker login {locked.addr}" in (info.value.hint or "")


@pytest.mark.registry
def test_bearer_token_handshake(registry: LocalRegistry, proxy_factory: Callable[..., Any]) -> None:
    gate = proxy_factory(registry.addr, bearer=True)
    client, ref = client_for(f"{gate.addr}/envcheck-test/busybox:1")
    remote = client.inspect(ref, AMD64)
    assert remote.platforms == (AMD64,)
    assert len(gate.token_requests) == 1  # one token, reused for the config blob
    assert "scope=repository%3Aenvcheck-test%2Fbusybox%3Apull" in gate.token_requests[0]
    assert [s for _, _, s in gate.requests].count(401) == 1


@pytest.mark.registry
def test_5xx_and_refused_connections_are_transient(
    registry: LocalRegistry, proxy_factory: Callable[..., Any]
) -> None:
    flaky = proxy_factory(registry.addr, fail_first=1)
    client, ref = client_for(f"{flaky.addr}/envcheck-test/busybox:1")
    with pytest.raises(RegistryUnavailable) as info:
        client.inspect(ref, AMD64)
    assert info.value.transient and info.value.retry and "HTTP 500" in info.value.message
    assert client.inspect(ref, AMD64).digest  # the next try passes
    dead, ref = client_for(f"127.0.0.1:{free_port()}/envcheck-test/busybox:1")
    with pytest.raises(RegistryUnavailable, match="Connection refused"):
        dead.inspect(ref, AMD64)


@pytest.mark.parametrize(
    "manifest",
    [
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "layers": [1],
        },
        {"schemaVersion": 2, "manifests": [{"platform": {"os": "linux", "architecture": "amd64"}}]},
    ],
    ids=["layer-not-an-object", "index-entry-without-digest"],
)
def test_a_malformed_manifest_is_a_registry_error_not_a_traceback(manifest: dict[str, Any]) -> None:
    """A registry (or a proxy in front of it) answering JSON that is not a valid manifest."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = json.dumps(manifest).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            payload = body if "/manifests/" in self.path else b"{}"
            self.send_response(200)
            self.send_header("Content-Type", manifest.get("mediaType", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_HEAD = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ref = parse_reference(f"127.0.0.1:{server.server_address[1]}/x/broken:1")
        with pytest.raises(RegistryError, match="malformed manifest"):
            RegistryClient.for_reference(ref, timeout=5).inspect(ref, AMD64)
    finally:
        server.shutdown()
        server.server_close()


# -- a trickle, a hostile realm, a document of the wrong shape ------------------------------------
@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickling_registry_is_cut_at_the_deadline(phase: str) -> None:
    """A byte every second meets the 5 s read timeout forever; the 3 s deadline ends it."""
    with TrickleServer(interval=1.0, phase=phase) as server:
        ref = parse_reference(f"{server.addr}/x/slow:1")
        client = RegistryClient.for_reference(ref, timeout=5, deadline=3)
        with pytest.raises(RegistryUnavailable, match="did not answer within 3 s") as info:
            client.inspect(ref, AMD64)
    assert info.value.transient and info.value.retry


class ChallengeServer:
    """Answers every request 401 with `WWW-Authenticate: Bearer realm="<realm>"`; counts them."""

    def __init__(self, realm: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        owner = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Bearer realm="{realm}",service="x"')
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_file_realm_is_never_opened(tmp_path: Any) -> None:
    """urllib once opened `file://…` and sent its "token" back to the registry."""
    planted = tmp_path / "token.json"
    planted.write_text('{"token": "read-from-the-local-disk"}')
    server = ChallengeServer(f"file://{planted}")
    try:
        ref = parse_reference(f"{server.addr}/x/locked:1")
        with pytest.raises(RegistryError, match="refused, only http") as info:
            RegistryClient.for_reference(ref, timeout=5).inspect(ref, AMD64)
        assert not isinstance(info.value, RegistryAuthRequired) and info.value.status == 4
        assert server.requests == ["/v2/x/locked/manifests/1"]  # no second try with a token
    finally:
        server.close()


@pytest.mark.parametrize(
    ("realm", "api_host", "allowed"),
    [
        ("https://auth.docker.io/token", "registry-1.docker.io", True),
        ("https://ghcr.io/token", "ghcr.io", True),
        ("https://GHCR.io:8443/token", "ghcr.io", True),
        ("http://127.0.0.1:5001/token", "127.0.0.1:5000", True),
        ("https://auth.example.org/token", "registry.example.org", False),
        ("https://evil.example/token", "ghcr.io", False),
        ("http://ghcr.io/token", "ghcr.io", False),
        ("https://user:pw@ghcr.io/token", "ghcr.io", False),
        ("file:///etc/shadow", "ghcr.io", False),
        ("ftp://ghcr.io/token", "ghcr.io", False),
        ("//ghcr.io/token", "ghcr.io", False),
        ("https://[::1/token", "ghcr.io", False),
    ],
    ids=str,
)
def test_realm_rules(realm: str, api_host: str, allowed: bool) -> None:
    assert (realm_refusal(realm, api_host) is None) is allowed


def test_a_realm_host_the_user_configured_is_allowed() -> None:
    assert (
        realm_refusal(
            "https://auth.example.org/token",
            "registry.example.org",
            frozenset({"auth.example.org"}),
        )
        is None
    )


MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("document", "config", "field"),
    [
        ({"mediaType": MANIFEST, "layers": {"a": 1}}, {}, "layers is dict"),
        (
            {"mediaType": MANIFEST, "layers": [{"digest": DIGEST, "size": "12"}]},
            {},
            "layers[0].size is str",
        ),
        (
            {"mediaType": MANIFEST, "layers": [{"digest": DIGEST, "size": True}]},
            {},
            "layers[0].size is bool",
        ),
        (
            {"mediaType": MANIFEST, "layers": [{"digest": "../../etc"}]},
            {},
            "layers[0].digest is str",
        ),
        ({"mediaType": MANIFEST, "config": {"digest": 5}}, {}, "config.digest is int"),
        ({"mediaType": MANIFEST, "config": "x"}, {}, "config is str"),
        ({"manifests": "all"}, {}, "manifests is str"),
        (
            {"manifests": [{"digest": DIGEST, "platform": {"os": 1, "architecture": "amd64"}}]},
            {},
            "manifests[0].platform is dict",
        ),
        (
            {"mediaType": MANIFEST, "config": {"digest": DIGEST, "size": 2}},
            {"config": {"Env": "A=1"}},
            "config.Env is str",
        ),
        (
            {"mediaType": MANIFEST, "config": {"digest": DIGEST, "size": 2}},
            {"config": {"Labels": {"a": 1}}},
            "config.Labels is dict",
        ),
        (
            {"mediaType": MANIFEST, "config": {"digest": DIGEST, "size": 2}},
            {"config": []},
            "config.config is list",
        ),
        (
            {"mediaType": MANIFEST, "config": {"digest": DIGEST, "size": 2}},
            {"architecture": ["amd64"]},
            "config platform is dict",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_field_of_the_wrong_shape_is_named(
    document: dict[str, Any], config: dict[str, Any], field: str
) -> None:
    with DocumentServer(document, config) as addr:
        ref = parse_reference(f"{addr}/x/broken:1")
        with pytest.raises(RegistryError, match="malformed manifest") as info:
            RegistryClient.for_reference(ref, timeout=5).inspect(ref, AMD64)
    assert field in info.value.message


def test_envchecks_own_bug_is_not_a_malformed_manifest(
    registry: LocalRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-all once turned our KeyError into "the registry sent a malformed manifest"
    (and the doctor then smoke-ran in-process with a warning): a bug must reach the CLI (exit 3)."""
    import envcheck.registry.http.client

    def broken(items: list[str]) -> dict[str, str]:
        raise KeyError("a bug in envcheck")

    monkeypatch.setattr(envcheck.registry.http.client, "env_mapping", broken)
    client, ref = client_for(registry.ref(BUSYBOX_CUDA))
    with pytest.raises(KeyError, match="a bug in envcheck"):
        client.inspect(ref, AMD64)


class DocumentServer:
    """Serves `document` for any manifest and `config` for any blob; a config descriptor naming
    DIGEST names the served config by its real digest: a config is content addressed, so it is
    checked."""

    def __init__(self, document: dict[str, Any], config: dict[str, Any]) -> None:
        self.document, self.config = document, config

    def __enter__(self) -> str:
        import copy
        import hashlib
        import json

        from tests.servers import Answer, FakeRegistry

        config = json.dumps(self.config).encode()
        document = copy.deepcopy(self.document)
        descriptor = document.get("config")
        if isinstance(descriptor, dict) and descriptor.get("digest") == DIGEST:
            descriptor["digest"] = "sha256:" + hashlib.sha256(config).hexdigest()
        kind = str(document.get("mediaType", "application/json"))
        self.server = FakeRegistry(
            {
                ("GET", "/manifests/"): Answer(
                    body=json.dumps(document).encode(), content_type=kind
                ),
                ("GET", "/blobs/"): Answer(body=config),
            }
        )
        return self.server.addr

    def __exit__(self, *exc: object) -> None:
        self.server.close()


# -- the engine's answer: recorded from `docker.APIClient.inspect_distribution` --------------------
# Engine 20.10.24, a registry:2 index of linux/amd64, linux/arm64 and a BuildKit-style
# unknown/unknown (attestation) entry; and a single-platform image (its platform from the config).
ENGINE_INDEX = {
    "Descriptor": {
        "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "digest": "sha256:602bd7d7f90ce61891816ef1d400dbc7130e140861fbe96770a8da265236bad7",
        "size": 782,
    },
    "Platforms": [
        {"architecture": "amd64", "os": "linux"},
        {"architecture": "arm64", "os": "linux"},
        {"architecture": "unknown", "os": "unknown"},
    ],
}
ENGINE_SINGLE = {
    "Descriptor": {
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "digest": "sha256:be1a81ba9113439e25bc968ae672c973d6967c043d65814616000b22ad592822",
        "size": 527,
    },
    "Platforms": [{"architecture": "amd64", "os": "linux"}],
}


@pytest.mark.parametrize(
    ("doc", "platforms"),
    [
        (ENGINE_INDEX, (AMD64, Platform("linux", "arm64"))),
        (ENGINE_SINGLE, (AMD64,)),
    ],
    ids=["index-with-attestation", "single-manifest"],
)
def test_the_engines_distribution_answer(
    doc: dict[str, Any], platforms: tuple[Platform, ...]
) -> None:
    ref = parse_reference("127.0.0.1:5000/envcheck-test/busybox:1")
    remote = parse_distribution(doc, ref)
    assert (remote.reference, remote.digest, remote.platforms) == (
        ref,
        doc["Descriptor"]["digest"],
        platforms,
    )
    assert remote.media_type == doc["Descriptor"]["mediaType"]
    assert (remote.size, remote.layers, dict(remote.env)) == (
        None,
        (),
        {},
    )  # the engine does not tell


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ([], "the answer is list"),
        ({"Platforms": []}, "Descriptor is missing"),
        ({"Descriptor": {"digest": "sha256:12", "size": 1}}, "Descriptor.digest is str"),
        (
            {"Descriptor": ENGINE_SINGLE["Descriptor"], "Platforms": [{"os": 1}]},
            "Platforms[0] is dict",
        ),
        ({"Descriptor": ENGINE_SINGLE["Descriptor"], "Platforms": "linux"}, "Platforms is str"),
    ],
    ids=["not-an-object", "no-descriptor", "bad-digest", "bad-platform", "platforms-not-a-list"],
)
def test_a_malformed_engine_answer_is_named(doc: Any, where: str) -> None:
    with pytest.raises(
        RegistryError, match="the engine sent a malformed distribution answer"
    ) as info:
        parse_distribution(doc, parse_reference("127.0.0.1:5000/a/b:1"))
    assert where in info.value.message and info.value.status == 4


# -- content addressed means checked --------------------------------------------------------------
def _registry_serving(config: bytes, served: bytes) -> Any:
    """A fake registry whose manifest names `config` by its digest and which serves `served`
    as that blob (a compromised mirror, a cache that kept another image's config)."""
    import hashlib
    import json

    from tests.servers import Answer, FakeRegistry

    digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": digest,
            "size": len(config),
        },
        "layers": [],
    }
    kind = "application/vnd.docker.distribution.manifest.v2+json"
    server = FakeRegistry(
        {
            ("GET", "/manifests/"): Answer(body=json.dumps(manifest).encode(), content_type=kind),
            ("GET", f"/blobs/{digest}"): Answer(
                body=served, content_type="application/octet-stream"
            ),
            ("GET", "/v2/"): Answer(body=b"{}"),
        }
    )
    return server


def _config(cuda: str) -> bytes:
    import json

    env = {"Env": [f"CUDA_VERSION={cuda}"]}
    rootfs = {"type": "layers", "diff_ids": []}
    return json.dumps(
        {"architecture": "amd64", "os": "linux", "config": env, "rootfs": rootfs}
    ).encode()


def test_an_image_config_is_judged_only_if_its_digest_matches() -> None:
    server = _registry_serving(_config("12.6.3"), _config("11.0.3"))
    try:
        ref = parse_reference(f"{server.addr}/envcheck-test/forged:1")
        with pytest.raises(RegistryError, match="image config whose digest is sha256:"):
            RegistryClient.for_reference(ref, timeout=5).inspect(ref, AMD64)
    finally:
        server.close()


def test_an_image_config_with_its_own_bytes_is_read() -> None:
    server = _registry_serving(_config("12.6.3"), _config("12.6.3"))
    try:
        ref = parse_reference(f"{server.addr}/envcheck-test/honest:1")
        remote = RegistryClient.for_reference(ref, timeout=5).inspect(ref, AMD64)
        assert remote.env.get("CUDA_VERSION") == "12.6.3"
    finally:
        server.close()
