"""Secrets: which keys are secret, URL credentials, redaction, identity stripping, scrubbing."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from geoeval.core.config.scrub import scrub_file, scrub_tree, scrub_zip
from geoeval.core.config.secrets import (
    REDACTED,
    URL_PATTERN,
    collect_secret_values,
    env_secret_values,
    find_urls,
    is_secret_key,
    key_words,
    redact,
    redact_url,
    redact_urls,
    scrub_text,
    secrets_in_plain_fields,
    strip_secrets,
)

SECRET_KEYS = [
    "api_key",
    "API_KEY",
    "openai_key",
    "anthropic_key",
    "OPENAI_API_KEY",
    "LOCAL_API_KEY",
    "apiKey",
    "x-api-key",
    "X-Api-Key",
    "apikey",
    "api_keys",
    "private_key",
    "signing_key",
    "secret_key",
    "secret_access_key",
    "client_secret",
    "secrets",
    "password",
    "db_password",
    "passwd",
    "passphrase",
    "Authorization",
    "proxy-authorization",
    "auth",
    "basic_auth",
    "auth_header",
    "credential",
    "credentials",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "creds",
    "cookie",
    "session_cookie",
    "token",
    "hf_token",
    "HF_TOKEN",
    "access_token",
    "accessToken",
    "refresh_token",
    "id_token",
    "auth_token",
    "bearer_token",
    "mcp_token",
    "GITHUB_TOKEN",
]
# names that exist in geoeval, its configs, Inspect's GenerateConfig/ModelUsage or common libraries
NOT_SECRET_KEYS = [
    "shard_key",
    "sort_key",
    "sort_keys",
    "primary_key",
    "style_key",
    "cache_key",
    "prompt_cache_key",
    "attribute_key",
    "attribute_keys",
    "osm_key",
    "map_key",
    "env_key",
    "src_key",
    "dst_key",
    "x_key",
    "station_key",
    "argument_key",
    "best_key",
    "cand_key",
    "public_key",
    "partition_key",
    "key",
    "keys",
    "api_key_var",
    "metric_key_part",
    "max_tokens",
    "reasoning_tokens",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "tokens",
    "prompt_tokens",
    "table_tokens",
    "max_completion_tokens",
    "input_tokens_cache_read",
    "protected_tokens",
    "estimate_tokens",
    "token_limit",
    "token_count",
    "token_usage",
    "token_id",
    "max_token",
    "tokenizer",
    "tokenizer_name",
    "authors",
    "authors_format",
    "author",
    "RAY_AUTH_MODE",
    "SSH_AUTH_SOCK",
    "authorization_url",
    "credentials_file",
    "cookie_name",
    "name",
    "base_url",
    "model",
    "temperature",
    "seed",
    "max_connections",
    "timeout",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_keys(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", NOT_SECRET_KEYS)
def test_non_secret_keys(key):
    assert not is_secret_key(key)


def test_non_string_keys_are_not_secret():
    assert not is_secret_key(3) and not is_secret_key(None)


def test_key_words_split_every_spelling_alike():
    assert (
        key_words("OPENAI_API_KEY")
        == key_words("openaiApiKey")
        == key_words("openai-api-key")
        == ["openai", "api", "key"]
    )


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://user:pass@host/v1", "https://***@host/v1"),
        ("http://sk-TESTSECRET123@127.0.0.1:8000/v1", "http://***@127.0.0.1:8000/v1"),
        ("postgresql://me:p%40ss@db.example:5432/x", "postgresql://***@db.example:5432/x"),
        ("https://h/v1?api_key=abc123&model=m&token=t0k", "https://h/v1?api_key=***&model=m&token=***"),
        ("https://h/?key=AIzaXYZ;sig=s1g", "https://h/?key=***;sig=***"),
        ("https://h/cb#access_token=zz&state=1", "https://h/cb#access_token=***&state=1"),
        ("https://h/v1?max_tokens=5&sort_key=a", "https://h/v1?max_tokens=5&sort_key=a"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://h/v1?api_key=", "https://h/v1?api_key="),
        ("not a url", "not a url"),
    ],
)
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def test_redact_urls_in_free_text():
    text = "connect to https://u:hunter22@h:1/v1 then 'http://h/x?token=abc' and http://plain/v1."
    assert redact_urls(text) == "connect to https://***@h:1/v1 then 'http://h/x?token=***' and http://plain/v1."


CONFIG = {
    "model": {
        "name": "openai-api/local/m",
        "base_url": "https://bob:pw-in-url-9@llm.example/v1?api_key=qk-in-query",
        "args": {"api_key": "sk-TESTSECRET123", "default_headers": {"X-Api-Key": "hdr-secret-77"}, "timeout": 30},
        "config": {"max_tokens": 1024, "reasoning_tokens": 256, "temperature": 0},
    },
    "suite": {"sort_key": "score", "shard_key": "id", "style_key": "osm", "primary_key": "sample_id"},
    "judge": {"models": ["rules"], "token": None, "password": ""},
    "env": {
        "credentials": {"user": "alice", "secret": "nested-secret"},
        "notes": ["use key sk-proj-ABCDEFGH12345 later"],
    },
    "tracking": {"tracking_uri": "http://mlflow-user:mlflow-pass@mlflow:5000"},
}


def test_redact_masks_every_secret_and_keeps_the_rest():
    red = redact(CONFIG)
    assert red["model"]["args"] == {"api_key": REDACTED, "default_headers": {"X-Api-Key": REDACTED}, "timeout": 30}
    assert red["model"]["base_url"] == "https://***@llm.example/v1?api_key=***"
    assert red["model"]["config"] == CONFIG["model"]["config"]
    assert red["suite"] == CONFIG["suite"]
    assert red["judge"] == {"models": ["rules"], "token": None, "password": ""}  # unset stays visible as unset
    assert red["env"]["credentials"] == REDACTED
    assert red["env"]["notes"] == ["use key *** later"]
    assert red["tracking"]["tracking_uri"] == "http://***@mlflow:5000"
    assert CONFIG["model"]["args"]["api_key"] == "sk-TESTSECRET123"  # a copy, the input untouched
    blob = json.dumps(red)
    for secret in ("TESTSECRET", "hdr-secret", "pw-in-url", "qk-in-query", "nested-secret", "ABCDEFGH", "mlflow-pass"):
        assert secret not in blob


def test_redact_keeps_container_types_and_scalars():
    assert redact({"a": (1, "x"), "b": [True, None, 2.5]}) == {"a": (1, "x"), "b": [True, None, 2.5]}
    assert redact({"password": 1234}) == {"password": REDACTED}


def _identity(cfg) -> str:
    return hashlib.sha256(json.dumps(strip_secrets(cfg), sort_keys=True).encode()).hexdigest()


def test_strip_secrets_removes_secret_keys_entirely():
    stripped = strip_secrets(CONFIG)
    assert stripped["model"]["args"] == {"default_headers": {}, "timeout": 30}
    assert stripped["judge"] == {"models": ["rules"]}
    assert "credentials" not in stripped["env"]
    assert stripped["model"]["base_url"] == "https://***@llm.example/v1?api_key=***"
    assert stripped["suite"] == CONFIG["suite"]


def test_a_rotated_key_keeps_the_identity_and_a_real_change_does_not():
    rotated = json.loads(json.dumps(CONFIG))
    rotated["model"]["args"]["api_key"] = "sk-ROTATED999999"
    rotated["model"]["base_url"] = "https://bob:new-password@llm.example/v1?api_key=other"
    rotated["judge"].pop("token")
    assert _identity(rotated) == _identity(CONFIG)
    changed = json.loads(json.dumps(CONFIG))
    changed["suite"]["sort_key"] = "other"
    changed["model"]["config"]["max_tokens"] = 512
    assert _identity(changed) != _identity(CONFIG)


def test_collect_secret_values():
    found = collect_secret_values(CONFIG)
    assert found == {
        "sk-TESTSECRET123",
        "hdr-secret-77",
        "pw-in-url-9",
        "qk-in-query",
        "alice",
        "nested-secret",
        "sk-proj-ABCDEFGH12345",
        "mlflow-pass",
    }


def test_collect_skips_short_values_and_placeholders():
    cfg = {
        "api_key": "abc",
        "token": "ollama",
        "vllm": {"api_key": "inspectai"},
        "password": 12345678,
        "url": "http://tok@h/",
        "secret": "long-enough",
    }
    assert collect_secret_values(cfg) == {"long-enough"}


def test_env_secret_values():
    env = {
        "OPENAI_API_KEY": "sk-env-123456",
        "HF_TOKEN": "hf-token-value",
        "PATH": "/usr/bin",
        "MAX_TOKENS": "1024",
        "OLLAMA_API_KEY": "ollama",
        "LOCAL_API_KEY": "",
        "RAY_AUTH_MODE": "disabled",
        "PIP_INDEX_URL": "https://me:index-pass@pypi.example/simple",
        "HOME": "/home/u",
    }
    assert env_secret_values(env) == {"sk-env-123456", "hf-token-value", "index-pass"}


def test_scrub_text_replaces_every_form_of_each_secret():
    secrets = {"sk-TESTSECRET123", "p@ss/word+1", "TESTSECRET"}
    text = (
        "key=sk-TESTSECRET123 and again sk-TESTSECRET123; encoded p%40ss%2Fword%2B1, raw p@ss/word+1, "
        "and TESTSECRET alone, url http://a:b@h/x"
    )
    assert scrub_text(text, secrets) == (
        "key=*** and again ***; encoded ***, raw ***, and *** alone, url http://***@h/x"
    )


@pytest.mark.parametrize(
    "text",
    [
        "1a://x",  # the scheme starts at its first letter
        "12://x a://b://c",  # no letter before the first "://"; a body swallows the next "://"
        "a:// b://",  # nothing after "://"
        "x.y+z-1://host/p?q=1'tail",
        "://x",
        "a://",
        "é http://h a9+://b",
        "data:image/png;base64,iVBORw0KGgo+/AB== then ftp://u:p@h/",
    ],
)
def test_find_urls_gives_the_patterns_matches(text):
    assert find_urls(text) == [m.span() for m in URL_PATTERN.finditer(text)]


def test_find_urls_gives_the_patterns_matches_on_random_text():
    # pieces dense in scheme characters, "://", and the body's stop characters
    import random

    rng = random.Random(7)
    pieces = ["a", "h", "Z", "9", "+", ".", "-", "://", "://", "://", ":", "/", " ", "'", "<", "\n", "@", "?", "é", "_"]
    matched = 0
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        matched += bool(URL_PATTERN.search(text))
        assert find_urls(text) == [m.span() for m in URL_PATTERN.finditer(text)], text
        assert redact_urls(text) == URL_PATTERN.sub(lambda m: redact_url(m.group(0)), text), text
    assert matched > 800  # the texts do hold URLs (1,005 of them)


def test_scrub_text_without_secrets_still_redacts_urls_and_key_shapes():
    assert scrub_text("GET https://h/?token=abc with sk-abcdefghijkl", []) == "GET https://h/?token=*** with ***"
    # ordinary words that merely look like the prefixes are left alone
    assert scrub_text("desk-organiser task-12345678 sk-short", []) == "desk-organiser task-12345678 sk-short"


def test_scrub_text_ignores_secrets_too_short_to_be_safe():
    assert scrub_text("a 123 abc", {"abc", "123", ""}) == "a 123 abc"


def test_scrub_file_rewrites_only_when_needed(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  args:\n    api_key: sk-TESTSECRET123\n  name: openai-api/local/m\n")
    os.chmod(path, 0o640)
    assert scrub_file(path, {"sk-TESTSECRET123"}) is True
    assert path.read_text() == "model:\n  args:\n    api_key: ***\n  name: openai-api/local/m\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert scrub_file(path, {"sk-TESTSECRET123"}) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]  # no temporary left behind


def test_scrub_zip_rewrites_the_members_that_hold_a_secret_and_keeps_the_rest(tmp_path):
    """An Inspect `.eval` log is a zip of JSON members: a member with the secret is blanked, the
    others (text without it, bytes that are not text) come back as they were, each with its own
    compression; a log with nothing to blank is left untouched."""
    import zipfile

    path = tmp_path / "run.eval"
    members = {
        "header.json": (b'{"model_args": {"api_key": "secret-value-1"}}', zipfile.ZIP_DEFLATED),
        "samples/1_epoch_1.json": (b'{"output": "no secret here"}', zipfile.ZIP_STORED),
        "image.png": (b"\x89PNG\xff\xfe secret-value-1", zipfile.ZIP_DEFLATED),  # not UTF-8: kept
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, compression) in members.items():
            archive.writestr(name, data, compress_type=compression)
    assert scrub_zip(path, {"secret-value-1"}) is True
    with zipfile.ZipFile(path) as archive:
        assert [i.filename for i in archive.infolist()] == list(members)
        assert archive.read("header.json") == b'{"model_args": {"api_key": "***"}}'
        assert archive.read("samples/1_epoch_1.json") == members["samples/1_epoch_1.json"][0]
        assert archive.read("image.png") == members["image.png"][0]
        assert [i.compress_type for i in archive.infolist()] == [c for _, c in members.values()]
    before = path.read_bytes()
    assert scrub_zip(path, {"secret-value-1"}) is False
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.eval"]  # no temporary left behind


def test_scrub_file_keeps_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"\xff\xfe binary then secret-value-1 end\n")
    assert scrub_file(path, {"secret-value-1"}) is True
    assert path.read_bytes() == b"\xff\xfe binary then *** end\n"


def test_scrub_tree_hydra_layout(tmp_path):
    hydra = tmp_path / "outputs" / "2026-12-01" / "10-00-00" / ".hydra"
    hydra.mkdir(parents=True)
    (hydra / "config.yaml").write_text("model:\n  args:\n    api_key: sk-TESTSECRET123\n")
    (hydra / "overrides.yaml").write_text("- +model.args.api_key=sk-TESTSECRET123\n")
    (hydra / "hydra.yaml").write_text("job:\n  name: app\n")
    (hydra.parent / "image.png").write_bytes(b"sk-TESTSECRET123")
    rewritten = scrub_tree(tmp_path / "outputs", {"sk-TESTSECRET123"})
    assert sorted(p.name for p in rewritten) == ["config.yaml", "overrides.yaml"]
    assert (hydra / "overrides.yaml").read_text() == "- +model.args.api_key=***\n"
    assert (hydra.parent / "image.png").read_bytes() == b"sk-TESTSECRET123"  # suffix not listed
    assert scrub_tree(tmp_path / "missing", {"x" * 8}) == []


def test_a_secret_copied_into_a_plain_field_is_found_with_where_it_came_from():
    environ = {"OPENAI_API_KEY": "sk-envKEYvalue123456", "HOME": "/root"}
    config = {
        "experiment_name": "run-sk-envKEYvalue123456",  # ${oc.env:OPENAI_API_KEY} inside a name
        "model": {"args": {"api_key": "cfgSECRETvalue99"}, "base_url": "http://u:pw-in-url-1@h/v1"},
        "tracking": {"run_note": "uses cfgSECRETvalue99"},  # ${model.args.api_key} copied
        "suite": {"tags": ["ok", "HOME is /root"]},  # not a secret variable: no finding
    }
    found = secrets_in_plain_fields(config, environ)
    assert found == [
        ("experiment_name", "the environment's OPENAI_API_KEY"),
        ("tracking.run_note", "model.args.api_key"),
    ]
    # the sources themselves are where secrets belong, and a URL's own credentials are redacted
    assert secrets_in_plain_fields({"model": config["model"]}, environ) == []


def test_a_config_that_copies_a_secret_into_a_plain_field_is_invalid(tmp_path, monkeypatch):
    from geoeval.core.errors import GeoevalError
    from tests.conftest import compose_spec

    monkeypatch.setenv("GEOEVAL_TEST_API_KEY", "plantedENVkey42xyz")
    with pytest.raises(GeoevalError, match=r"experiment_name: holds the value of a secret .*GEOEVAL_TEST_API_KEY"):
        compose_spec(tmp_path, "experiment_name=${oc.env:GEOEVAL_TEST_API_KEY}")
    assert compose_spec(tmp_path, "experiment_name=plain").experiment_name == "plain"
