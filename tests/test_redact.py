import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.redact import redact, redact_text

SECRETS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "gitlab": "glpat-AbCdEfGhIjKlMnOpQrSt",
    "slack": "xoxb-123456789012-abcdefghijkl",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "google": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "stripe": "sk_live_51AbCdEfGhIjKlMnOp",
    "huggingface": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "npm": "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "sendgrid": "SG.AbCdEfGhIjKlMnOpQr.StUvWxYz0123456789AbCd",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_known_key_formats_are_redacted(name: str) -> None:
    secret = SECRETS[name]
    text = f"before {secret} after"
    redacted = redact_text(text)
    assert secret not in redacted
    assert redacted.startswith("before [REDACTED:") and redacted.endswith(" after")


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ('curl -H "Authorization: Bearer abc.def.ghijklmnop0123"', "abc.def.ghijklmnop0123", "Bearer "),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "Basic "),
        ("postgres://bob:hunter22@db.example.com/app", "hunter22", "postgres://bob:"),
        ("export DB_PASSWORD=hunter22", "hunter22", "export DB_PASSWORD="),
        ('const apiKey = "abc123xyz";', "abc123xyz", "const apiKey = "),
        ("MY_SECRET_KEY: 'p4ss w0rd'", "p4ss w0rd", "MY_SECRET_KEY: "),
        ('{"client_secret": "zzzzyyyy"}', "zzzzyyyy", '{"client_secret": '),
        ("GITHUB_TOKEN=foo-bar-baz", "foo-bar-baz", "GITHUB_TOKEN="),
        ("X-Api-Key: abcd1234efgh", "abcd1234efgh", "X-Api-Key: "),
        ("mysql --password hunter22 -u root", "hunter22", "mysql --password "),
        ("https://hooks.slack.com/services/T0/B0/XyZ123", "T0/B0/XyZ123", "https://"),
    ],
)
def test_secrets_in_headers_urls_and_assignments_keep_their_context(
    text: str, secret: str, kept: str
) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert kept in redacted


def test_private_keys_are_redacted_whole() -> None:
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    redacted = redact_text(f"key:\n{key}\ndone")
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in redacted
    assert redacted == "key:\n[REDACTED:private-key]\ndone"


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4096",
        "the tokenizer splits words",
        "author: bob",
        "https://example.com/path?x=1",
        "git clone https://github.com/owner/repo",
        "PWD=/home/me",
        "task-sk-notakey",
        "password: ***",
        "risk-assessment-for-the-new-pipeline-module",
        "basic configuration of the service",
        "Bearer authentication is configured",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_long_runs_of_a_prefix_are_scanned_in_linear_time() -> None:
    import time

    started = time.perf_counter()
    for prefix in ("eyJ", "sk-", "token=", "://a:", "Bearer ", "--password "):
        redact_text(prefix * 100_000)
    assert time.perf_counter() - started < 2.0  # quadratic patterns took minutes on these inputs


def test_values_under_secret_keys_are_redacted_at_any_depth() -> None:
    value = {"env": {"PASSWORD": "short", "count": 3}, "list": [{"api_key": "k"}], "name": "x"}
    assert redact(value) == {
        "env": {"PASSWORD": "[REDACTED:secret-field]", "count": 3},
        "list": [{"api_key": "[REDACTED:secret-field]"}],
        "name": "x",
    }


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.sampled_from(sorted(SECRETS.values())),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
)
def test_a_secret_never_survives_whatever_surrounds_it(before: str, secret: str, after: str) -> None:
    assert secret not in redact_text(f"{before} {secret} {after}")


@pytest.mark.parametrize(
    "text",
    [
        "line one\\nghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",  # after an escaped newline
        "key=%3DAIzaSyA-1234567890abcdefghijklmnopqrstu",  # after a percent-encoded byte
        "Authorization: Basic dXNlcjpwYXNz",  # user:pass, no digit, no padding
        "curl --token abcd1234 https://x",
    ],
)
def test_secrets_in_escaped_encoded_and_flag_forms_are_redacted(text: str) -> None:
    redacted = redact_text(text)
    assert "[REDACTED:" in redacted
    assert not any(s in redacted for s in ("ghp_AbCd", "AIzaSyA", "dXNlcjpwYXNz", "abcd1234"))


def test_a_secret_across_a_cut_is_redacted_in_the_piece_that_is_kept() -> None:
    from ingest.truncate import STRING_LIMIT, truncate_strings

    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for offset in range(STRING_LIMIT - 1024 - 40, STRING_LIMIT - 1024 + 1):  # every place around the cut
        text = "x" * offset + " " + token + " " + "y" * 100_000
        kept = truncate_strings(text, clean=redact_text)
        assert "ghp_AbCd" not in kept and "AbCdEfGhIjKl" not in kept


def test_each_string_of_a_payload_is_redacted_once() -> None:
    from ingest.envelope import _cut_and_redact

    text = 'CONF_PASSWORD = "hunter22"`, then more'
    assert redact({"content": text}, text=_cut_and_redact) == {"content": redact_text(text)}
    assert redact_text(text) == "CONF_PASSWORD = [REDACTED:secret-assignment]`, then more"
