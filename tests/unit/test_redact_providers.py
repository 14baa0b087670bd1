"""Keys of current LLM and developer platforms, and secrets said in shapes the first rules missed (core/redact): each
one redacted, and the names, slugs, prose and public keys that look like them kept."""

from __future__ import annotations

import base64
import random

import pytest

from memsearch_lsp.core.redact import safe_text

KEY = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJkLm2nOp5qRs8tUv1wXy4zAb7c"  # made up, like every key here
HEX = "4f9a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b"
PROVIDERS = {  # each was written to memory in clear
    "openrouter-key": f"sk-or-v1-{HEX}",
    "openai-key": f"sk-{HEX[:32]}",  # DeepSeek's shape: lower-case hex, once taken for a branch's slug
    "groq-key": f"gsk_{KEY[:52]}",
    "xai-key": f"xai-{KEY[:80]}",
    "perplexity-key": f"pplx-{KEY[:48]}",
    "replicate-token": f"r8_{KEY[:37]}",
    "tavily-key": f"tvly-dev-{KEY[:32]}",
    "pinecone-key": f"pcsk_4f9a2b_{KEY[:60]}",
    "langsmith-key": f"lsv2_pt_{HEX[:32]}_{KEY[:10]}",
    "notion-token": f"ntn_{HEX[:12]}{KEY[:34]}",
    "twilio-key": f"SK{HEX[:32]}",
    "atlassian-token": f"ATATT3xFfGF0{KEY[:50]}=1A2B3C4D",
    "postman-key": f"PMAK-{HEX[:24]}-{HEX[:34]}",
    "square-token": f"EAAAEOuLQPDB{KEY[:52]}",
    "braintree-token": f"access_token$production$x3v9mn2p7q8r${HEX[:32]}",
    "linear-key": f"lin_api_{KEY[:40]}",
    "grafana-token": f"glsa_{KEY[:32]}_{HEX[:8]}",
    "newrelic-key": "NRAK-A1B2C3D4E5F6G7H8I9J0K1L2M3N",
    "doppler-token": f"dp.st.prd.{KEY[:43]}",
    "firecrawl-key": f"fc-{HEX[:32]}",
}


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_each_platforms_key_is_replaced_by_a_marker_naming_its_kind(kind: str) -> None:
    turn = f"**Asked:** set up the client\n\n**Outcome:** configured it with {PROVIDERS[kind]}, then ran the tests."
    assert safe_text(turn) == (
        f"**Asked:** set up the client\n\n**Outcome:** configured it with [redacted: {kind}], then ran the tests."
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("OPENROUTER key sk-proj-ab3def6hij9klm2nop5qrs8tuv1wxy4zab7cde0fgh3ijk", "ab3def6hij9klm2"),  # lower case
        ("prod IAM user deploy-bot: Zk3Qw9Lp2Xv7Bn4Mc8Rt1Yh6Jd0Gs5Fa3Ke9Uo2I", "Zk3Qw9Lp2Xv7"),  # AWS, said by "IAM"
        ("Cookie: session=abc; sessionid=Xk9mP2vL7qR4sTz9Ab3dEf6", "Xk9mP2vL7qR4"),
        ('{"headers": {"cookie": "csrftoken=Q3k9ZpL2mX7vN4bR8tY1; theme=dark"}}', "Q3k9ZpL2mX7v"),
        ("wifi pass Xk9mP2vL7qR4sT", "Xk9mP2vL7qR4sT"),
        ("the Wi-Fi pass is Xk9mP2vL7qR4sT", "Xk9mP2vL7qR4sT"),
        # a JWT whose payload is `{` and a new line, or `{ "`, not `{"` (eyJ)
        ("eyJhbGciOiJIUzI1NiJ9.ewogICJzdWIiOiAiMTIzIgp9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJ"),
        ("eyJhbGciOiJIUzI1NiJ9.eyAic3ViIjogIjEyMyIgfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJ"),
        # a private key's body without its BEGIN line (RSA, PKCS#8, EC, OpenSSH)
        ("the key body:\nMIIEowIBAAKCAQEA7xZk3Qw9Lp2Xv7Bn4Mc8\nRt1Yh6Jd0Gs5Fa3Ke9Uo2I\n", "Rt1Yh6Jd0Gs5"),
        ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "ASCBKcwggSj"),
        ("> MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oWu0BQN5x7RmoAoGCCqGSM49", "Bkg4LVWM9nuw"),
        ("key: b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQy", "AAAAtzc2gtZWQy"),
        # an invisible character inside a key: the whole key goes, not only what comes before it
        ("key sk-proj-Ab3dEf6hIj9kLm2\u200bnOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk here", "nOp5qRs8tUv1"),
        ("ghp_Q3k9ZpL2mX7vN4bR8t\u2060Y1wE6uI0oA5sD3fG7h", "Y1wE6uI0oA5"),
        (f"DOPPLER_TOKEN in CI is dp.pt.{KEY[:43]}", KEY[:12]),  # Doppler's personal token (`dp.pt.`)
    ],
)
def test_secrets_in_shapes_the_rules_missed_are_redacted(text: str, secret: str) -> None:
    out = safe_text(text)
    assert secret not in out and "[redacted: " in out, out


def test_a_key_split_by_an_invisible_character_is_replaced_with_it() -> None:
    text = "use sk-proj-Ab3dEf6hIj9kLm2\u200bnOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk\u200b for the deploy\u200b"
    assert safe_text(text) == "use [redacted: openai-key]\u200b for the deploy\u200b"


@pytest.mark.parametrize(
    "text",
    [  # branch names, packages, model names, identifiers and prose that start like a key
        "git checkout sk-fix-login-bug && git merge sk-2024-q3-roadmap-v2 and sk-learn-compat",
        "the sk-update-deps-for-python312 branch",
        "xai-org/grok-1 is on GitHub; pip install xai-sdk; pplx-7b-online and pplx-api docs",
        "Groq keys start with gsk_ and LangSmith's with lsv2_pt_ or lsv2_sk_; Pinecone's with pcsk_",
        "r8_to_r15 registers and r8_ prefix; tvly-search is a tool; ATATT3 and PMAK- prefixes; NRAK- keys",
        "secret_key_base and secret_santa_2024 and secret_ThisIsAVeryLongIdentifierNameForTestingXy",
        "SKdeadbeefdeadbeefdeadbeefdeadbeef and SKU 12345 and ntn_ tokens and lin_api_ keys",
        "EAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA and fc-deadbeefdeadbeefdeadbeefdeadbeef",
        "Braintree tokens look like access_token$production$<merchant>$<hex>",
        # cookies without a made value; Wi-Fi prose
        "Set-Cookie: theme=dark; Path=/; HttpOnly",
        "#=> Set-Cookie: discount=BAhpMg==--2c1c6906c90a3bc4fd54a51ffb41dffa4bf6b5f7; path=/",  # signed, no secret
        "the cookie: sessionid is set after login",
        "the wifi pass is in the drawer; wifi passthrough works",
        # public keys and certificates (not private), JWT-like prose
        "cert MIIDXTCCAkWgAwIBAgIJAKZ7nB and public key MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host",
        "a\u200bb and an emoji 👩\u200d💻 with a joiner stay as they are",
    ],
)
def test_names_slugs_and_public_keys_that_look_like_keys_are_kept(text: str) -> None:
    assert safe_text(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "The browser sent `Cookie: sessionid=a8F3kLm92QxZ7pR4tY6u` to the old API; fixed in middleware.py.",
            "` to the old API; fixed in middleware.py.",
        ),
        (
            "| Cookie: sessionid=a8F3kLm92QxZ7pR4tY6u | sent by the login page | yes |",
            " | sent by the login page | yes |",
        ),
        ("Found a leaked key: MIIEowIBAAKCAQEAu5Fq8hkiG9w0BAQEF\nRotated it today.", "\nRotated it today."),
    ],
)
def test_a_secret_is_replaced_and_the_words_after_it_stay(text: str, kept: str) -> None:
    shown = safe_text(text)
    assert "[redacted: " in shown and shown.endswith(kept), shown


@pytest.mark.parametrize(
    "value",
    [  # a bearer token of letters only, or shaped like a class's name, was kept (audit Z3, 6)
        "QwErTyUiOpAsDfGhJkLzXcVb",
        "TWfwXgedIkvvFxcoHUSdlvcvwKTXWhWCLdbWgVgs",
        "SgAgWhcebsmi3S3SgJtPu4CgM6bvGeSw",
        "550e8400-e29b-41d4-a716-446655440000",
        "Xk9pQ2mL7v=R4tZ8wN3bY6cF1hJ5",  # (review R2: an "=" inside was taken for a setting's)
        "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3DEUifiRBkKG5E2XzMDjRf",  # URL-encoded
        "12|aBcD3fGh1jKlMnOpQrStUvWxYz0123456789abcd",  # a Laravel Sanctum token: its id, a bar, its secret
    ],
)
@pytest.mark.parametrize("said", ["Authorization: Bearer {}", "authorization: basic {}", "gh auth login --token {}"])
def test_a_value_after_bearer_basic_or_a_token_flag_is_a_credential_whatever_its_alphabet(
    said: str, value: str
) -> None:
    assert safe_text(said.format(value)) == said.format("[redacted: auth-header]")


def test_placeholders_words_and_settings_after_bearer_basic_or_a_token_flag_are_kept() -> None:
    text = (
        'curl -H "Authorization: Bearer YOUR_ACCESS_TOKEN" -H "Authorization: Bearer your-access-token-here"\n'
        "Authorization: Bearer xxxxxxxxxxxxxxxxxxxxxxxx and Basic dXNlcm5hbWU6cGFzc3dvcmQ= (username:password)\n"
        "Basic internationalization comes first; AUTH=basic SESSION_COOKIE=sessionid; --token process.env.GH_TOKEN\n"
        # (review R2: words, classes, headings and paths after the adjective "basic" or a bearer were redacted)
        "Added a basic RateLimiterMiddleware; Supports Basic Internationalization; see Basic Setup/Configuration;\n"
        "wire the Bearer TokenRefresherV2Client; ## Basic Troubleshooting-Guide-Steps; Basic v2.3.1-beta.4-release-cand"
    )
    assert safe_text(text) == text


def _key_body(lines: int) -> list[str]:
    """A private key's body as PEM wraps it: 64 characters of base64 a line (made-up bytes)."""
    body = base64.b64encode(random.Random(7).randbytes(48 * lines)).decode()
    return [body[at : at + 64] for at in range(0, len(body), 64)]


@pytest.mark.parametrize("quote", ["", "> ", "    "])
def test_a_private_keys_tail_pasted_from_its_middle_with_its_end_line_is_redacted_whole(quote: str) -> None:
    body = [*_key_body(13), "pfyuuw/6N6nAKhQS5WRdzQ==", "-----END RSA PRIVATE KEY-----"]  # (audit Z3, 5)
    text = "the rest of the key:\n" + "\n".join(quote + line for line in body) + "\nRotated it today."
    assert safe_text(text) == f"the rest of the key:\n{quote}[redacted: private-key]\nRotated it today."
    assert safe_text(text, lines=True).count("\n") == text.count("\n")


def test_an_end_line_after_words_or_a_whole_key_block_is_left_to_the_other_rules() -> None:
    docs = "PEM files end with a line like\nExample\n-----END PRIVATE KEY-----\nand start with a BEGIN line."
    whole = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(_key_body(4)) + "\n-----END PRIVATE KEY-----"
    assert safe_text(docs) == docs
    assert safe_text(f"key:\n{whole}\nthen\n{whole}") == "key:\n[redacted: private-key]\nthen\n[redacted: private-key]"


OPENAI = "sk-proj-Q8Zr2LmX7pTw4NvB9kYdQ8Zr2LmX7pTw4NvB9kYdAAzz91"  # made up
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJxOHpyMiIsImlhdCI6MTcwMDAwMDAwMH0."
    "Q8Zr2LmX7pTw4NvB9kYdQ8Zr2LmX7pTw4NvB9kYdQ8"
)
GITHUB = "ghp_Q8Zr2LmX7pTw4NvB9kYdQ8Zr2LmX7pTw4NvB"


@pytest.mark.parametrize(
    ("text", "shown"),
    [  # each kept its second line, or all of it (audit Z3, 2)
        (
            f"The failing token was\n{JWT[:60]}\n{JWT[60:]}\nand more",
            "The failing token was\n[redacted: jwt]\nand more",
        ),
        (
            f"deploy token {GITHUB[:20]}\n{GITHUB[20:]}\nand the key",
            "deploy token [redacted: github-token]\nand the key",
        ),
        (f"key {OPENAI[:30]}\n{OPENAI[30:]} was leaked", "key [redacted: openai-key] was leaked"),
        (f"export OPENAI_API_KEY={OPENAI[:25]}\\\n{OPENAI[25:]}\n", "export OPENAI_API_KEY=[redacted: openai-key]\n"),
        (f"> {OPENAI[:20]}\r\n{OPENAI[20:40]}\r\n{OPENAI[40:]}\r\n", "> [redacted: openai-key]\r\n"),
        (f"| {GITHUB[:24]}\n{GITHUB[24:]} |", "| [redacted: github-token] |"),
        (f"it was {OPENAI[:44]}\n{OPENAI[44:]}.", "it was [redacted: openai-key]."),
    ],
)
def test_a_key_or_token_wrapped_over_lines_is_redacted_whole(text: str, shown: str) -> None:
    assert safe_text(text) == shown
    assert safe_text(text, lines=True).count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "after",
    ["Thanks", "and the rest of the note", "v2 of the API is next", "README.md", "---", "OK", "- item-2", "Done."],
)
def test_the_line_after_a_key_that_ends_its_line_is_kept_when_it_is_prose(after: str) -> None:
    assert safe_text(f"my key is {OPENAI}\n{after}") == f"my key is [redacted: openai-key]\n{after}"
    assert safe_text(f"the build ran on\n{after}") == f"the build ran on\n{after}"
