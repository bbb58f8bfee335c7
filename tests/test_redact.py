import pathlib
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.redact import KINDS, redact, redact_text

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


PYPI_TOKEN = "pypi-AgEIcHlwaS5vcmcCJDFhYmMxMjM0LTU2NzgtOWFiYy1kZWYwLTEyMzQ1Njc4OWFiYwACKlszLCJhYmMiXQAABiD"


def test_a_token_used_as_a_key_is_redacted_and_no_value_is_lost() -> None:
    token, other = SECRETS["github"], "ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210"
    redacted = redact({"tokens": {token: "repo", other: "admin"}, "x": {"name": token}})
    assert token not in str(redacted) and other not in str(redacted)
    assert sorted(redacted["tokens"].values()) == ["admin", "repo"]


@pytest.mark.parametrize(
    "value",
    [
        {"password": 123456789},
        {"db": {"PASSWORD": 3.14159}},
        {"db": {"pass": "hunter22"}},
        {"settings": [{"pwd": "hunter22"}]},
        {"passphrase": "correct horse"},
        {"db_pass": "hunter22"},
        {"DB_PASS": "hunter22"},
        {"dbPass": 31337},
        {"smtp-pwd": "hunter22"},
    ],
)
def test_secret_fields_of_any_scalar_type_and_spelling_are_redacted(value: object) -> None:
    redacted = str(redact(value))
    assert "[REDACTED:secret-field]" in redacted
    assert not any(s in redacted for s in ("123456789", "3.14159", "hunter22", "horse", "31337"))


def test_fields_that_only_sound_like_secrets_are_kept() -> None:
    value = {"bypass": "cache", "compass": "north", "max_tokens": 4096, "is_secret": True, "password": None}
    assert redact(value) == value


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("export DB_PASS=hunter22", "hunter22", "export DB_PASS="),
        ("MYSQL_ROOT_PWD='s3cr3t!x' docker compose up", "s3cr3t!x", "MYSQL_ROOT_PWD="),
        (
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;"
            "EndpointSuffix=core.windows.net",
            "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
            "AccountName=acct;AccountKey=",
        ),
        (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=q1w2e3r4t5y6u7i8o9=",
            "q1w2e3r4t5y6u7i8o9",
            "SharedAccessKeyName=Root;SharedAccessKey=",
        ),
        (
            "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&se=2030-01-01&sig=AbCd%2BEfGh1234%3D",
            "AbCd%2BEfGh1234",
            "?sv=2022-11-02&sp=r&se=2030-01-01&sig=",
        ),
        ("curl -u bob:hunter22 https://api.example.com", "hunter22", "curl -u bob:"),
        ("curl -s --user bob:hunter22 https://api.example.com", "hunter22", "curl -s --user bob:"),
        ("curl --user=bob:hunter22 https://x", "hunter22", "curl --user=bob:"),
        ("curl -u 'bob:hunter 22' https://x", "hunter 22", "curl -u 'bob:"),
        ('curl -u "bob:hunter 22" https://x', "hunter 22", 'curl -u "bob:'),
        ("mysql -u root -phunter22 app", "hunter22", "mysql -u root -p"),
        ("mysql -u root -p'hunter 22' app", "hunter 22", "mysql -u root -p"),
        ("mysqldump -h db -phunter22 app > dump.sql", "hunter22", "mysqldump -h db -p"),
        (f"twine upload -p {PYPI_TOKEN} dist/*", PYPI_TOKEN[20:], "twine upload -p "),
        ("https://user:p@ss@host.example.com/x", "p@ss", "https://user:"),
        ("postgres://bob:h@ck:er@db:5432/app", "ck:er", "postgres://bob:"),
    ],
)
def test_passwords_in_commands_and_connection_strings_are_redacted(text: str, secret: str, kept: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert kept in redacted


def test_a_url_password_runs_to_the_last_at_sign_before_the_host() -> None:
    assert redact_text("https://user:p@ss@host.example.com/x") == (
        "https://user:[REDACTED:url-password]@host.example.com/x"
    )


@pytest.mark.parametrize(
    "text",
    [
        "pass the test before you push",
        "the password reset flow sends an email",
        "ssh -p 2222 host",
        "docker run -p 8080:80 -p8443:443 image",
        "docker run -u 1000:1000 image",
        "git push -u origin main",
        "mysql -p app",
        "PASS: 12 tests",
        "PWD=/home/me",
        "https://user@host.example.com/path?email=a@b.c",
        "http://localhost:3000?email=a@b.c",
    ],
)
def test_commands_and_prose_near_secret_words_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


AWS_KEY_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "text",
    [
        f"use the AWS key {AWS_KEY_ID} with secret {AWS_SECRET}",
        f"{AWS_KEY_ID},{AWS_SECRET}",  # a row of the credentials CSV the console gives
        f"Access key ID: {AWS_KEY_ID}\nSecret: {AWS_SECRET}\n",
        f"{AWS_SECRET} goes with {AWS_KEY_ID}",
    ],
)
def test_an_aws_secret_key_beside_its_key_id_is_redacted(text: str) -> None:
    redacted = redact_text(text)
    assert AWS_SECRET not in redacted and AWS_KEY_ID not in redacted
    assert "EXAMPLEKEY" not in redacted and "wJalrXUtnFEMI" not in redacted


def test_forty_characters_of_base64_far_from_any_key_id_are_kept() -> None:
    text = f"commit {AWS_SECRET}; " + "x " * 150 + AWS_KEY_ID
    assert AWS_SECRET in redact_text(text)


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("the password is hunter2-Xy9!", "hunter2-Xy9!", "the password is "),
        ("The password is hunter2-Xy9!. Then deploy.", "hunter2-Xy9!", ". Then deploy."),
        ('the password is: "Passw0rd!" for now', "Passw0rd!", 'the password is: "'),
        ("token: \n  9f8e7d6c5b4a3f2e1d0c9b8a", "9f8e7d6c5b4a3f2e1d0c9b8a", "token: "),
        ("my api key is 3f9a8b7c6d5e4f3a2b1c0d9e, keep it", "3f9a8b7c6d5e4f3a2b1c0d9e", ", keep it"),
        ("the secret is now x7Kq-29fLmZ", "x7Kq-29fLmZ", "the secret is now "),
        ("with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG", "with secret "),
        ("passwd Zq8#mW2!vT for root", "Zq8#mW2!vT", " for root"),
        ("le mot de passe est Tr0ub4dor&3", "Tr0ub4dor&3", "le mot de passe est "),
        ("Mot de passe : Tr0ub4dor&3, merci", "Tr0ub4dor&3", ", merci"),
    ],
)
def test_a_secret_named_in_prose_is_redacted(text: str, secret: str, kept: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert kept in redacted and "[REDACTED:" in redacted


@pytest.mark.parametrize(
    "text",
    [
        "the token budget is 200,000 a day",
        "the password reset flow sends an email",
        "the secret sauce is caching",
        "the secret is out-of-band",
        "the password is stored in vault",
        "tokens: 12k/day",
        "the token is v1.2.3",
        "/etc/passwd is world-readable",
        "which token is used? the one in .env",
        "the api key is in config/settings.py",
    ],
)
def test_prose_near_the_words_that_name_secrets_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["secret", "token", "password", "api key", "mot de passe", " is ", " ", ":", "=", "'", ".",
             "x1Y", "AKIAIOSFODNN7EXAMPLE", "A" * 39, "/", "+", "\\n"]
        ),
        min_size=1,
        max_size=8,
    ).map("".join)
)  # fmt: skip
def test_redaction_stays_linear_on_runs_of_what_names_a_secret(unit: str) -> None:
    import time

    text = unit * (50_000 // len(unit) + 1)
    started = time.perf_counter()
    redact_text(text)
    # linear is a few ms; a pattern trying the rest of the text at each place takes seconds
    assert time.perf_counter() - started < 1.0


def test_hook_arguments_in_a_dead_letter_are_redacted(tmp_path: pathlib.Path) -> None:
    import json

    from ingest.dead_letters import write_dead_letter

    argv = ["hook", "PostToolUse", "--token", "hunter22xyz", SECRETS["github"]]
    path = write_dead_letter(str(tmp_path), "hook", "broken", b"{", argv=argv)
    with open(path) as f:
        kept = json.load(f)["argv"]
    assert kept[:3] == ["hook", "PostToolUse", "--token"]
    assert "hunter22xyz" not in str(kept) and SECRETS["github"] not in str(kept)


def test_every_pattern_is_linear_on_long_runs_of_its_literals() -> None:
    import time

    slowest = 0.0
    for kind in KINDS:
        pattern = kind.pattern()
        for literal in kind.literals:
            for unit in (literal, literal + " ", literal + "a" * 40 + ":", literal.upper() + "0" * 40 + "@"):
                text = unit * (100_000 // len(unit))
                started = time.perf_counter()
                pattern.search(text)
                slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.25, slowest  # a quadratic pattern takes seconds to minutes on 100k characters


LITERALS = sorted({literal for kind in KINDS for literal in kind.literals})


@given(st.lists(st.sampled_from([*LITERALS, "a", "0", " ", "-", "_", ".", "X"]), max_size=30).map("".join))
def test_the_trie_calls_for_the_kinds_the_substring_tests_call_for(text: str) -> None:
    from ingest.redact import _kinds_called_for, _kinds_of_literal, _literal_finder

    by_tests = {i for literal, kinds in _kinds_of_literal().items() if literal in text for i in kinds}
    by_trie = {i for literal in _literal_finder().findall(text) for i in _kinds_called_for(literal)}
    assert by_trie == by_tests


def test_gitleaks_rules_are_translated_from_re2_or_left_out() -> None:
    from ingest.token_formats_build import formats

    rules: list[dict[str, Any]] = [
        {"id": "scoped", "keywords": ["p8e-"], "regex": r"\b(p8e-(?i)[a-z0-9]{4})(?:[\s;]|$)"},
        {"id": "posix", "keywords": ["pat"], "regex": r"\bpat[[:alnum:]]{4}\b"},
        {"id": "end", "keywords": ["sha256~"], "regex": r"sha256~[\w-]{4}(?:[^\w-]|\z)"},
        {
            "id": "assignment",
            "keywords": ["beamer"],
            "regex": r"(?i)[\w.-]{0,50}?(?:beamer)[\s=]{0,5}(\w{8})",
        },
        {"id": "unbounded", "keywords": ["curl"], "regex": r"\bcurl\b.*-u (\S+)"},
        {"id": "unsupported", "keywords": ["x"], "regex": r"(?U)x+"},
        {"id": "path-only", "path": r"\.p12$"},
    ]
    kept = {name: re.compile(source) for name, _, source, _, _ in formats(rules)}
    assert sorted(kept) == ["end", "posix", "scoped"]
    assert kept["scoped"].search("p8e-AbC1") and not kept["scoped"].search("P8E-abc1")
    assert kept["posix"].search("patAb12") and not kept["posix"].search("pat:]]]]")
    assert kept["end"].search("sha256~ab_c") and not kept["end"].search("sha256~ab_cd")
    assert not kept["end"].search("sha256~ab_\u00e9 ")  # \w is ASCII, as in RE2


@pytest.mark.parametrize(
    "key", ["password\n", "db_pass\n", "TOKEN\n", "credent\u0131als", "author\u0130zation", "pa\u017f\u017f"]
)
def test_a_secret_key_the_pattern_knows_is_always_tried(key: str) -> None:
    from ingest.redact import redact

    assert redact({key: "hunter2hunter2"}) == {key: "[REDACTED:secret-field]"}
