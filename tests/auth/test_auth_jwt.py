"""A proxy's signed assertion: IAP's shape (ES256, kid, aud, iss), RS256 from another
proxy, keys from a JWKS file and from a URL, and every way a token can be wrong."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from openrl_inspect.auth import (
    IAP_HEADER,
    AuthSettings,
    FileKeys,
    JwtAuthenticator,
    KeySource,
    UrlKeys,
    parse_jwks,
)
from openrl_inspect.core.errors import AuthUnavailable, Unauthenticated
from openrl_inspect.core.principal import Role
from starlette.datastructures import Headers
from support.auth_harness import (
    IAP_AUDIENCE,
    IAP_ISSUER,
    SigningKey,
    auth_client,
    iap_claims,
    jwks,
    serve_bytes,
    tamper,
    write_lines,
)
from support.harness import GRAPHQL

pytestmark = pytest.mark.anyio

QUERY = "{ sessions { totalCount } }"


@pytest.fixture(scope="module")
def es() -> SigningKey:
    return SigningKey.es256()


@pytest.fixture(scope="module")
def rs() -> SigningKey:
    return SigningKey.rs256()


def iap_settings(tmp_path: Path, **over: Any) -> AuthSettings:
    values: dict[str, Any] = {
        "mode": "jwt",
        "jwks_file": str(tmp_path / "jwks.json"),
        "audience": (IAP_AUDIENCE,),
        "issuer": IAP_ISSUER,
        "reload_interval_s": 0,
    }
    values.update(over)
    return AuthSettings(**values)


def file_verifier(tmp_path: Path, *keys: SigningKey, **over: Any) -> JwtAuthenticator:
    (tmp_path / "jwks.json").write_bytes(jwks(*keys))
    s = iap_settings(tmp_path, **over)
    assert s.jwks_file is not None
    source = FileKeys(s.jwks_file, s.algorithms, interval_s=0)
    source.start()
    verifier = JwtAuthenticator(s, source)
    verifier.start()
    return verifier


async def reason(verifier: JwtAuthenticator, headers: dict[str, str]) -> str:
    with pytest.raises(Unauthenticated) as caught:
        await verifier.authenticate(Headers(headers))
    return caught.value.reason


async def test_an_iap_assertion_is_a_viewer_of_its_own_name(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es)
    token = es.sign(iap_claims("alice@example.com"))
    principal = await verifier.authenticate(Headers({IAP_HEADER: token}))
    assert (principal.name, principal.role) == ("alice@example.com", Role.VIEWER)
    assert principal.owners == {"alice@example.com"}


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"aud": "/projects/999/global/backendServices/1"}, "bad_audience"),
        ({"iss": "https://evil.example"}, "bad_issuer"),
        ({"nbf": int(time.time()) + 3600}, "not_yet_valid"),
        ({"iat": None}, "missing_claim"),
        ({"aud": None}, "missing_claim"),
        ({"email": None}, "no_name"),
    ],
)
async def test_a_token_with_a_wrong_claim_is_refused(
    tmp_path: Path, es: SigningKey, claims: dict[str, Any], expected: str
) -> None:
    verifier = file_verifier(tmp_path, es)
    token = es.sign(iap_claims(**claims))
    assert await reason(verifier, {IAP_HEADER: token}) == expected


async def test_expiry_allows_the_leeway_only(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es, leeway_s=30)
    late = es.sign(iap_claims(exp=int(time.time()) - 10))
    assert (await verifier.authenticate(Headers({IAP_HEADER: late}))).name == "alice@example.com"


async def test_signature_key_and_header_faults_are_refused(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es)
    other = SigningKey.es256(kid=es.kid)  # same kid, another key: a forgery
    good = es.sign(iap_claims())
    assert await reason(verifier, {IAP_HEADER: tamper(good)}) == "bad_signature"
    assert await reason(verifier, {IAP_HEADER: other.sign(iap_claims())}) == "bad_signature"
    assert await reason(verifier, {IAP_HEADER: es.sign(iap_claims(), kid="rotated-9")}) == (
        "unknown_key"
    )
    assert await reason(verifier, {}) == "missing"
    assert await reason(verifier, {IAP_HEADER: "not.a.jwt"}) == "malformed"
    assert await reason(verifier, {"authorization": f"Bearer {good}"}) == "missing"


async def test_algorithm_confusion_is_refused(tmp_path: Path, es: SigningKey) -> None:
    """HS256 signed with the public key as the secret, and alg none: both refused."""
    import jwt

    verifier = file_verifier(tmp_path, es)
    unsigned = jwt.encode(iap_claims(), key="", algorithm="none", headers={"kid": es.kid})
    assert await reason(verifier, {IAP_HEADER: unsigned}) == "bad_algorithm"
    forged = jwt.encode(iap_claims(), "x" * 32, algorithm="HS256", headers={"kid": es.kid})
    assert await reason(verifier, {IAP_HEADER: forged}) == "bad_algorithm"


async def test_rs256_from_another_proxy_in_the_authorization_header(
    tmp_path: Path, rs: SigningKey, es: SigningKey
) -> None:
    verifier = file_verifier(
        tmp_path,
        rs,
        es,
        algorithms=("RS256",),
        jwt_header="authorization",
        issuer=None,
        audience=("inspector",),
        name_claim="preferred_username",
        owners_claim="groups",
    )
    claims = iap_claims(aud="inspector", iss=None, preferred_username="bob", groups=["rl-team"])
    principal = await verifier.authenticate(Headers({"authorization": f"Bearer {rs.sign(claims)}"}))
    assert (principal.name, principal.owners) == ("bob", frozenset({"rl-team"}))
    # The ES key was dropped from the set: RS256 only was configured.
    assert await reason(verifier, {"authorization": f"Bearer {es.sign(claims)}"}) in (
        "bad_algorithm",
        "unknown_key",
    )


async def test_roles_and_owners_from_the_principals_file(tmp_path: Path, es: SigningKey) -> None:
    principals = tmp_path / "principals.jsonl"
    write_lines(
        principals,
        '{"name": "ops@example.com", "role": "operator"}',
        '{"name": "carol@example.com", "owners": ["carol", "eval-bot"]}',
    )
    verifier = file_verifier(
        tmp_path,
        es,
        principals_file=str(principals),
        operators=("root@example.com",),
        owner_local_part=True,
    )

    async def who(email: str) -> tuple[str, Role, frozenset[str]]:
        p = await verifier.authenticate(Headers({IAP_HEADER: es.sign(iap_claims(email))}))
        return p.name, p.role, p.owners

    assert (await who("ops@example.com"))[1] == Role.OPERATOR
    assert (await who("root@example.com"))[1] == Role.OPERATOR
    assert (await who("carol@example.com"))[2] == {"carol", "eval-bot"}
    assert (await who("dan@example.com"))[1:] == (Role.VIEWER, frozenset({"dan"}))
    # The file changes: carol becomes an operator without a restart.
    write_lines(principals, '{"name": "carol@example.com", "role": "operator"}')
    assert (await who("carol@example.com"))[1] == Role.OPERATOR


async def test_an_unlisted_name_can_be_refused_with_403(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es, admit_unlisted=False, operators=("ops@example.com",))
    async with auth_client(verifier) as client:
        stranger = await client.post(
            GRAPHQL, json={"query": QUERY}, headers={IAP_HEADER: es.sign(iap_claims())}
        )
        listed = await client.post(
            GRAPHQL,
            json={"query": QUERY},
            headers={IAP_HEADER: es.sign(iap_claims("ops@example.com"))},
        )
    assert stranger.status_code == 403
    assert stranger.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert listed.status_code == 200


async def test_over_http_a_missing_or_bad_assertion_is_401(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es)
    async with auth_client(verifier) as client:
        missing = await client.get(GRAPHQL, params={"query": QUERY})
        expired = await client.post(
            GRAPHQL,
            json={"query": QUERY},
            headers={IAP_HEADER: es.sign(iap_claims(exp=int(time.time()) - 600))},
        )
        ok = await client.post(
            GRAPHQL, json={"query": QUERY}, headers={IAP_HEADER: es.sign(iap_claims())}
        )
    for resp in (missing, expired):
        assert resp.status_code == 401
        assert resp.headers["www-authenticate"].startswith("Bearer")
        assert resp.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert ok.status_code == 200


def test_a_jwks_with_bad_keys_keeps_the_good_ones(es: SigningKey, rs: SigningKey) -> None:
    doc = json.loads(jwks(es, rs))
    doc["keys"] += [
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        {"kty": "EC", "crv": "P-256", "x": "bad", "y": "bad", "kid": "broken"},
        "not a key",
        {**es.jwk(), "kid": "private", "d": "AAAA"},
    ]
    keys = parse_jwks(json.dumps(doc).encode(), ("ES256",), "test")
    assert set(keys) == {es.kid}
    assert parse_jwks(b"<html>", ("ES256",), "test") == {}


class Jwks:
    """An httpx transport serving a JWKS that can be swapped or broken; counts fetches."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.status = 200
        self.fetches = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.fetches += 1
        return httpx.Response(self.status, content=self.body)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def url_verifier(tmp_path: Path, source: KeySource) -> JwtAuthenticator:
    return JwtAuthenticator(iap_settings(tmp_path), source)


async def test_keys_from_a_url_are_cached_refreshed_and_rotated(
    tmp_path: Path, es: SigningKey
) -> None:
    served, clock, rotated = Jwks(jwks(es)), Clock(), SigningKey.es256(kid="iap-es256-2")
    client = httpx.AsyncClient(transport=httpx.MockTransport(served))
    keys = UrlKeys(
        "https://www.gstatic.com/iap/verify/public_key-jwk",
        ("ES256",),
        refresh_s=3600,
        min_refetch_s=60,
        client=client,
        clock=clock,
    )
    verifier = url_verifier(tmp_path, keys)
    for _ in range(5):
        await verifier.authenticate(Headers({IAP_HEADER: es.sign(iap_claims())}))
    assert served.fetches == 1
    # IAP rotates: the new kid triggers one early fetch, not one per request.
    served.body = jwks(es, rotated)
    clock.t += 61
    await verifier.authenticate(Headers({IAP_HEADER: rotated.sign(iap_claims())}))
    assert served.fetches == 2
    for _ in range(5):
        assert await reason(verifier, {IAP_HEADER: es.sign(iap_claims(), kid="made-up")}) == (
            "unknown_key"
        )
    assert served.fetches == 2
    # The provider goes down: the keys held keep working past the refresh interval.
    served.status = 503
    clock.t += 3600
    await verifier.authenticate(Headers({IAP_HEADER: es.sign(iap_claims())}))
    assert served.fetches == 3
    await client.aclose()


async def test_no_keys_ever_fetched_is_503_not_401(tmp_path: Path, es: SigningKey) -> None:
    served = Jwks(b"")
    served.status = 500
    client = httpx.AsyncClient(transport=httpx.MockTransport(served))
    keys = UrlKeys("https://keys.example/jwks", ("ES256",), client=client)
    verifier = url_verifier(tmp_path, keys)
    with pytest.raises(AuthUnavailable):
        await verifier.authenticate(Headers({IAP_HEADER: es.sign(iap_claims())}))
    async with auth_client(verifier) as http:
        resp = await http.post(
            GRAPHQL, json={"query": QUERY}, headers={IAP_HEADER: es.sign(iap_claims())}
        )
    assert resp.status_code == 503
    assert resp.json()["errors"][0]["extensions"]["code"] == "AUTH_UNAVAILABLE"
    await client.aclose()


async def test_keys_from_a_local_http_server(tmp_path: Path, es: SigningKey) -> None:
    with serve_bytes(jwks(es)) as (url, seen):
        keys = UrlKeys(url, ("ES256",), timeout_s=5)
        verifier = url_verifier(tmp_path, keys)
        async with auth_client(verifier) as client:
            ok = await client.post(
                GRAPHQL, json={"query": QUERY}, headers={IAP_HEADER: es.sign(iap_claims())}
            )
            bad = await client.post(
                GRAPHQL,
                json={"query": QUERY},
                headers={IAP_HEADER: tamper(es.sign(iap_claims()))},
            )
    assert ok.status_code == 200 and bad.status_code == 401
    assert seen == ["/iap/verify/public_key-jwk"]


# -- issue 25: the edges of a token ---------------------------------------------------------


def test_weak_rsa_keys_are_not_taken_from_the_jwks() -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    short = SigningKey("short", "RS256", rsa.generate_private_key(65537, 1024))
    tiny_e = SigningKey("tiny-e", "RS256", rsa.generate_private_key(3, 2048))
    good = SigningKey.rs256("good")
    keys = parse_jwks(jwks(short, tiny_e, good), ("RS256",), "test")
    assert set(keys) == {"good"}


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"exp": int(time.time()) + 10 * 365 * 86400}, "too_long"),
        ({"exp": str(int(time.time()) + 600)}, "bad_claim"),
        ({"iat": str(int(time.time()) - 5)}, "bad_claim"),
        ({"nbf": str(int(time.time()) - 5)}, "bad_claim"),
    ],
)
async def test_times_are_numbers_and_lifetimes_bounded(
    tmp_path: Path, es: SigningKey, claims: dict[str, Any], expected: str
) -> None:
    verifier = file_verifier(tmp_path, es, max_lifetime_s=3600)
    assert await reason(verifier, {IAP_HEADER: es.sign(iap_claims(**claims))}) == expected


async def test_a_name_is_compared_exactly_never_trimmed(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es, operators=("ops@example.com",))
    spaced = es.sign(iap_claims("ops@example.com "))
    assert await reason(verifier, {IAP_HEADER: spaced}) == "bad_name"
    exact = await verifier.authenticate(
        Headers({IAP_HEADER: es.sign(iap_claims("ops@example.com"))})
    )
    assert exact.role == Role.OPERATOR
    # NFC: a name written with a combining accent is the same name as the composed one.
    composed = "jos\u00e9@example.com"
    verifier = file_verifier(tmp_path, es, operators=(composed,))
    decomposed = es.sign(iap_claims("jose\u0301@example.com"))
    assert (await verifier.authenticate(Headers({IAP_HEADER: decomposed}))).role == Role.OPERATOR


async def test_two_assertion_headers_are_refused(tmp_path: Path, es: SigningKey) -> None:
    verifier = file_verifier(tmp_path, es)
    one, other = es.sign(iap_claims("alice@example.com")), es.sign(iap_claims("bob@example.com"))
    raw = [(IAP_HEADER.encode(), one.encode()), (IAP_HEADER.encode(), other.encode())]
    with pytest.raises(Unauthenticated) as caught:
        await verifier.authenticate(Headers(raw=raw))
    assert caught.value.reason == "duplicate_header"
