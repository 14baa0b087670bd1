"""Redaction (core/redact.py) and what `remember` makes of a note: secrets out, `<private>` spans out, the rest
kept; placeholders, variables and ordinary text left alone; notes found again, sections taken out."""

from __future__ import annotations

import random
import string
from urllib.parse import quote

import pytest

from memsearch_lsp.core.forget import section_of, without_section
from memsearch_lsp.core.notes import NoteError, clean_heading, clean_note, same_note
from memsearch_lsp.core.redact import find_secrets, redact, safe_text, without_private
from memsearch_lsp.core.search.hybrid import display_heading, empty_section

# Made-up keys in each provider's format (none of them is real).
SECRETS = {
    "openai-key": "sk-proj-Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3fG7hJ2kL9zX",
    "anthropic-key": "sk-ant-api03-Zx8Kq2Lm9Np4Rs7Tv1Wy3Ab5Cd6Ef8Gh0Ij2Kl4Mn",
    "aws-key": "AKIAQ3K9ZPL2MX7VN4BR",
    "github-token": "ghp_Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3fG7h",
    "gitlab-token": "glpat-Q3k9ZpL2mX7vN4bR8tY1",
    "slack-token": "xoxb-2048-4096-Q3k9ZpL2mX7vN4bR8tY1wE6u",
    "stripe-key": "sk_live_Q3k9ZpL2mX7vN4bR8tY1wE6u",
    "google-key": "AIzaSyQ3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3f",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "npm-token": "npm_Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3fG7h",
    "pypi-token": "pypi-AgEIcHlwaS5vcmcCJGQ3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3fG7hJ2kL9zX",
    "huggingface-token": "hf_Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3f",
    "sendgrid-key": "SG.Q3k9ZpL2mX7vN4bR8tY1wE.6uI0oA5sD3fG7hJ2kL9zXQ3k9ZpL2mX7vN4bR8tY1wE6",
    "vault-token": "hvs.CAESIQ3k9ZpL2mX7vN4bR8tY1wE6uI0oA5",
}
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAq3k9ZpL2mX7vN4bR8tY1\nwE6uI0oA5sD3fG7hJ2kL9zX==\n"
    "-----END RSA PRIVATE KEY-----"
)
AWS_SECRET = "Q3k9ZpL2mX7vN4bR8tY1/wE6uI0oA5sD3fG7hJ2k"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_providers_key_is_replaced_by_a_marker_naming_its_kind(kind: str) -> None:
    text = f"we used {SECRETS[kind]} for the deploy, then rotated it."
    assert redact(text) == f"we used [redacted: {kind}] for the deploy, then rotated it."


def test_private_keys_aws_secrets_url_passwords_and_secret_settings() -> None:
    note = (
        f"Key for the box:\n{PEM}\nthen ssh in.\n"
        f"aws_secret_access_key = {AWS_SECRET}\n"
        "DB is postgres://admin:hunter2pass@db.example.com:5432/app (primary)\n"
        "export GITHUB_TOKEN='q9Zr7Lm2Xv'\nDB_PASSWORD=correct-horse-battery\nOPENAI_API_KEY=" + SECRETS["openai-key"]
    )
    out = redact(note)
    for secret in (PEM.split("\n")[1], AWS_SECRET, "hunter2pass", "q9Zr7Lm2Xv", "correct-horse", SECRETS["openai-key"]):
        assert secret not in out
    assert "Key for the box:\n[redacted: private-key]\nthen ssh in." in out
    assert "aws_secret_access_key = [redacted: aws-secret]" in out
    assert "postgres://admin:[redacted: url-password]@db.example.com:5432/app (primary)" in out
    assert "export GITHUB_TOKEN='[redacted: secret]'" in out and "DB_PASSWORD=[redacted: secret]" in out
    assert "OPENAI_API_KEY=[redacted: openai-key]" in out  # the most specific kind wins


@pytest.mark.parametrize(
    "text",
    [
        "psql postgres://username:password@host.com/dbname?sslmode=require",
        'DATABASE_URL="postgresql://postgres:postgres@localhost:5432/postgres"',
        "POSTGRES_PASSWORD=postgres and RAILS_MASTER_KEY=abc123",
        "const MUX_ACCESS_TOKEN = process.env.MUX_ACCESS_TOKEN as string",
        "new_user.password = params[:password]",
        "max_tokens=2048 tokenizer=bert-base-uncased author=Josh TOKEN_LIMIT=4000",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "PASSWORD=$DB_PASSWORD and API_KEY=<your key> and SECRET=${SECRET}",
        "Stripe's documented test key sk_test_BQokikJOvBiI2HlWgH4olfQ2 is public",
        "the task-management-dashboard-component-v2 slug",
        "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted.",
    ],
)
def test_placeholders_variables_and_ordinary_text_are_left_alone(text: str) -> None:
    assert find_secrets(text) == [] and redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # layouts a developer pastes (a sweep found each one written to memory as it was)
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGQ3k9ZpL2mX7vN4\nbR8tY1wE6uI0\n"
            "-----END PGP PRIVATE KEY BLOCK-----",
            "lQOYBGQ3k9ZpL2mX7vN4",
        ),
        ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB", "LS0tLS1CRUdJTi"),
        ("REDIS_URL=redis://:hunter2Qx9vLm@cache.internal:6379/0", "hunter2Qx9vLm"),
        ("Server=db1;Database=app;User Id=sa;Password=Hunter2Qx9;", "Hunter2Qx9"),
        ("PGPASSWORD=S3cretPw9 psql -h db", "S3cretPw9"),
        ("DB_PASS=S3cretPw9 and GH_PAT=Q3k9ZpL2mX7vN4bR8", "S3cretPw9"),
        ("./deploy --password=S3cretPw9 --region eu", "S3cretPw9"),
        ('DB_PASSWORD="correct horse battery staple"', "correct horse"),
        ("SECRET_KEY = 'x9$k(2m!v@q3z#w7'", "x9$k(2m"),
        ("DB_PASSWORD=mySup3rS3cretPw", "mySup3rS3cretPw"),
        ("VAULT_TOKEN=Correct.Horse.Battery9", "Correct.Horse"),
        ("postgres:\n  password: hunter2Qx9vLm", "hunter2Qx9vLm"),
        ('{"password": "hunter2Qx9vLm", "api_token": "Q3k9ZpL2mX7vN4bR"}', "hunter2Qx9vLm"),
        ("AZURE=DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Fd0Nhcy/1kGD2VD/eR1UYzaLiA==;", "Fd0Nhcy"),
        (f"the key pair is {SECRETS['aws-key']} / {AWS_SECRET} for staging, as agreed", AWS_SECRET),
        ("curl -u admin:S3cretPw9 https://api.example.com", "S3cretPw9"),
        ("mysql -uroot -pS3cretPw9 app", "S3cretPw9"),
        ("The admin password is hunter2Qx9vLm for now", "hunter2Qx9vLm"),
        ("Passwort: Geheim2024!", "Geheim2024"),
        ("A senha é Qw7Er9Ty2Ui4", "Qw7Er9Ty2Ui4"),
        ("password=Summer2024(", "Summer2024"),  # a person's password ending in a bracket is no call
        ("DB_PASSWORD=Hunter(2)", "Hunter(2)"),
        ("the password is Welcome1[", "Welcome1"),
        ("Senha do banco: minhasenha123", "minhasenha123"),  # "of what" in Portuguese, Spanish, German, French
        ("das Passwort lautet geheim456", "geheim456"),
        ("Das Passwort für den Server lautet geheim456.", "geheim456"),
        ("La contraseña de la base es secreto789.", "secreto789"),
        ("le mot de passe du wifi est Soleil2024", "Soleil2024"),
        ("密码: Mima2024abc", "Mima2024abc"),
        ("the API token is Qw7Er9Ty2Ui4xZ8cVb3n", "Qw7Er9Ty2Ui4xZ8cVb3n"),
        ('token := "Xq8Wm3Rt7Yp2Lk9Vn4Bz"', "Xq8Wm3Rt7Yp2Lk9Vn4Bz"),
        ("SECRET_KEY=django-insecure-8x#k2@q!v9m$w3z&r7t", "r7t"),
        ("Twilio auth token e0ad84173581569969e58b081006f7e3", "e0ad84173581569969e58b081006f7e3"),
        # a passphrase of words: no digit, but no word either
        ("The password is CorrectHorseBatteryStaple", "CorrectHorseBatteryStaple"),
        ("the wifi password is sunflower-meadow-lantern.", "sunflower-meadow-lantern"),
        # SQL, YAML block scalars, a token in a URL, settings named auth, cookie, salt or signature
        ("sshpass -pXk9mP2vL7qR4tZ8wN3bY ssh deploy@host", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("CREATE USER bob IDENTIFIED BY 'Xk9mP2vL7q''R4tZ8';", "R4tZ8"),
        ("CREATE USER scott IDENTIFIED BY Tiger2024x;", "Tiger2024x"),
        ("ALTER USER postgres WITH PASSWORD 'Xk9mP2vL7qR4tZ8wN3bY';", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("CREATE ROLE app WITH LOGIN PASSWORD 'hunter2Qx9vLm';", "hunter2Qx9vLm"),
        ("db:\n  password: |\n    Xk9mP2vL7qR4tZ8wN3bY\n  host: db", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("token: >-\n  Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("git clone https://Xk9mP2vL7qR4tZ8wN3bY@github.com/org/repo.git", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("PASSWORD＝Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("REDIS_AUTH=Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("SESSION_COOKIE=Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("SALT=Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
        ("webhook_signature: Xk9mP2vL7qR4tZ8wN3bY", "Xk9mP2vL7qR4tZ8wN3bY"),
    ],
)
def test_secrets_in_the_layouts_people_paste_are_redacted(text: str, secret: str) -> None:
    assert secret not in safe_text(text) and "[redacted: " in safe_text(text)


@pytest.mark.parametrize(
    "text",
    [  # a setting's ordinary value, code that names a secret, prose: kept as written
        "AUTH_TOKEN=disabled GITHUB_TOKEN=required DB_PASSWORD=unset token=expired password=prompt",
        "token = JWT.encode(payload, secret, 'HS256')",
        'API_SECRET = ENV["KIT_API_SECRET"]',
        "password: Yup.string().required('Password is required'),",
        "Password: the reset flow sends a link; the password is stored hashed.",
        "the laws and draws of the game",
        # a second sweep: commands, hashing words, ids and names under secret-sounding keys
        "CI logs in with `docker login -u ci -p $CI_TOKEN` and `mysql -u root -p$MYSQL_ROOT_PASSWORD`",
        "`sshpass -p prompt` and curl -u admin:admin http://localhost",
        "For mysql tests use pytest -pno:randomly; docker run -p 5432:5432 postgres; ssh -p 2222 host",
        "The password is argon2id-hashed and 2FA-protected. Password: min12chars rule",
        "The invalid token 550e8400-e29b-41d4-a716-446655440000 was rejected; github token gh-actions-release-2024",
        "signing_key: kid-2024-03\ntoken: gpt-4o-mini\nsecret: sha256\nhmac_secret: k8s-prod-db",
        "      'X-Kit-Api-Key': apiKey,",
        "The password is rotated weekly; the password is in Vault; the password is auto-generated.",
    ],
)
def test_settings_code_and_prose_that_only_name_a_secret_are_kept(text: str) -> None:
    assert safe_text(text) == text


def test_private_spans_are_removed_whole_and_an_open_one_runs_to_the_end() -> None:
    assert without_private("a <private>my salary is 100k</private> b") == "a  b"
    assert without_private("a <PRIVATE>x\ny</Private> b <private>z") == "a  b "
    assert without_private("a <private>outer <private>inner</private> STILL</private> b") == "a  b"  # nested
    assert without_private("a <private class=x>x</private > b < private >y</private>") == "a  b "
    assert without_private("a <private/> b </private> c") == "a <private/> b </private> c"  # hides nothing
    # unbalanced (the tag named in prose): each span to its first close, as before nesting was read
    assert without_private("Discussed <private> tags: inside <private>this</private> is dropped.") == (
        "Discussed  is dropped."
    )
    assert safe_text(f"<private>{SECRETS['aws-key']}</private>keep {SECRETS['aws-key']}") == "keep [redacted: aws-key]"


def test_text_made_safe_line_by_line_keeps_every_line_where_it_was() -> None:
    """What compaction reads of a log: a span or a secret over several lines leaves its line breaks, so a fact's
    line is the archived original's."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\nQ2mZ\n-----END RSA PRIVATE KEY-----"
    text = f"a <private>x\ny\nz</private> b\n{pem}\nc <private>open\nrest"
    assert safe_text(text, lines=True) == "a \n\n b\n[redacted: private-key]\n\n\n\nc \n"
    assert safe_text(text) == "a  b\n[redacted: private-key]\nc "
    assert without_private("<private> tags: <private>a\nb</private> c", lines=True) == "\n c"  # unbalanced


def test_a_secret_a_private_span_or_the_note_names_is_redacted_where_it_is_said_again() -> None:
    """`<private>DB_PASSWORD=X</private> rotate X` kept X (the span went before secrets were looked for); a heading
    that repeats the password its note names kept it (the heading was redacted alone)."""
    assert safe_text("<private>DB_PASSWORD=Kx9vQ2mZ7pLw3</private> rotate Kx9vQ2mZ7pLw3 today") == (
        " rotate [redacted: secret] today"
    )
    note = "Rotate it now. The env line was DB_PASSWORD=Kx9vQ2mZ7pLw3"
    assert clean_heading("Rotate Kx9vQ2mZ7pLw3 now", note) == "Rotate [redacted: secret] now"
    assert clean_heading("Rotate Kx9vQ2mZ7pLw3 now") == "Rotate Kx9vQ2mZ7pLw3 now"  # (alone nothing says it is one)
    assert clean_heading("## Deploy <private>for Ana</private> notes ##", "x") == "Deploy  notes"
    # a private span naming hundreds of keys never pushes the text's own secret out of those looked for again
    keys = " ".join(f"ghp_{n:04d}Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3f" for n in range(80))
    text = f"<private>{keys}</private>postgres://app:Tr0ub4dor3xKq@db:5432/x, rotate Tr0ub4dor3xKq next week"
    assert "Tr0ub4dor3xKq" not in safe_text(text)


def test_remember_cleans_the_note_and_its_heading_and_refuses_an_all_private_note() -> None:
    body = clean_note(f"deploy with {SECRETS['github-token']} <private>home address</private>done")
    assert body == "deploy with [redacted: github-token] done"
    assert (
        clean_heading(f"09:41 OPENAI_API_KEY={SECRETS['openai-key']}") == "09:41 OPENAI_API_KEY=[redacted: openai-key]"
    )
    with pytest.raises(NoteError, match="private"):
        clean_note("<private>all of it</private>")


LOG = "# 2026-12-05\n\n## 09:41\n\nWe chose Kafka.\n\n## 10:02 Retries\n\nFive retries.\nWith backoff.\n"


def test_a_note_already_in_the_log_is_found_by_its_whole_body() -> None:
    assert same_note(LOG, "We chose Kafka.") == (3, 5)
    assert same_note(LOG, "Five retries.\nWith backoff.") == (7, 10)
    assert same_note(LOG, "Five retries.") is None  # part of a note is another note
    memory = "# Memory\n\n## Preferences\n\n- tabs over spaces\n- short commits\n"
    assert same_note(memory, "short commits", long_term=True) == (6, 6)


def test_a_section_is_taken_out_and_a_title_or_preamble_is_refused_with_the_reason() -> None:
    assert section_of(LOG, 5) == (3, 6)
    assert without_section(LOG, 3, 5) == "# 2026-12-05\n\n## 10:02 Retries\n\nFive retries.\nWith backoff.\n"
    assert without_section(LOG, 7, 10) == "# 2026-12-05\n\n## 09:41\n\nWe chose Kafka.\n"
    with pytest.raises(NoteError, match="title"):
        section_of(LOG, 1)
    with pytest.raises(NoteError, match="before the file's first heading"):
        section_of("loose text\n\n## A\n\nb\n", 1)


def test_a_bare_time_heading_is_shown_by_its_first_line_with_the_time_beside_it() -> None:
    assert display_heading("09:41", "## 09:41\n\n- We chose **Kafka** for the event bus\n") == (
        "We chose Kafka for the event bus (09:41)"
    )
    assert display_heading("09:41 (2)", "## 09:41 (2)\n\nlonger " + "word " * 30).endswith("… (09:41)")
    assert display_heading("Decisions", "## Decisions\n\n- x") == "Decisions"
    assert display_heading("[2026-02-05](archive/2026-02-05.md)", "") == "2026-02-05"  # a summary's day: its date
    assert display_heading("See ![logo](a.png)", "") == "See ![logo](a.png)"
    assert display_heading("09:41", "## 09:41\n") == "09:41"
    assert empty_section("# 2026-12-05\n") and empty_section("## Decisions") and not empty_section("## A\n\nb")


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # a probe of 111 secrets as agents and people write them: these were written in clear
        ("- **Password:** Nc5!rT8wQa", "Nc5!rT8wQa"),
        ("**API key:** 442305c411d4d6bb5b4443bb2e38beb8", "442305c411d4d6bb5b4443bb2e38beb8"),
        ("- `DB_PASSWORD`: `Nc5!rT8wQb`", "Nc5!rT8wQb"),
        ("| DB_HOST | db.internal |\n| DB_PASSWORD | Nc5!rT8wQz |", "Nc5!rT8wQz"),
        ("Password for the VPN: Bq4!zN8xTe", "Bq4!zN8xTe"),
        ("login admin, password: Gh7kLp2Qz (rotate after the demo)", "Gh7kLp2Qz"),
        ("The staging admin password is sunflower, please change it later.", "sunflower"),
        ("use passphrase 'correct horse battery staple' for the backup key", "horse battery"),
        ("the password is\xa0Gh7kLp2Qa", "Gh7kLp2Qa"),
        ("wifi: AcmeGuest pw: Mv8!qT3zXk", "Mv8!qT3zXk"),
        ("the webhook secret is Rt6vB9xQmZ3k", "Rt6vB9xQmZ3k"),
        ("my PIN is 4821", "4821"),
        ("The door passcode is 482913", "482913"),
        ('-H "DD-API-KEY: 8beb83e2bb3444b5bb6d4d114c503244" -d @series.json', "8beb83e2bb3444b5bb6d4d114c503244"),
        ("postgres://app_user:kd8/gaS9sD+QprU7@db.internal:5432/app", "kd8/gaS9sD+QprU7"),
        ("redis-cli -h cache.internal -a lMG7kjrOLgYdRHuLYFIJIIiw ping", "lMG7kjrOLgYdRHuLYFIJIIiw"),
        ("mongosh \"mongodb://db:27017\" -u admin -p 'Xk9#mP2vLq' --authenticationDatabase admin", "Xk9#mP2vLq"),
        ("openssl pkcs12 -export -in c.pem -passout pass:Hx7qP2mWz9 -out c.p12", "Hx7qP2mWz9"),
        ("htpasswd -b /etc/nginx/.htpasswd admin Pz8!kW3nQr", "Pz8!kW3nQr"),
        ("wget --user=deploy --password Fq2!nX7vBm https://artifacts.acme.io/app.tar.gz", "Fq2!nX7vBm"),
        ("The Mailgun key cd38153daad0f6d1d4a879d0c7f05e61-6bee97d1-74ca7aac was rotated.", "cd38153daad0f6d1"),
        ("https://api.telegram.org/bot6521922311:AAOENGRrY-cT38qXQQDY9sAbVoG2fn7vt7t/sendMessage", "AAOENGRrY"),
        ('bot.run("MTU3MzMwNDU2MjEyMzUzMjMx.SvzKq5.1PdG9Tty1gdNpuZwyn99BWGbmxLc_OIbA1F5-m")', "SvzKq5.1PdG9"),
        ('{"auths": {"registry.acme.io": {"auth": "Y2ktYm90OkdoN2tMcDJRelh3OQ=="}}}', "Y2ktYm90OkdoN2tMcDJRelh3OQ=="),
        ("Charge it to my Visa 4539 1488 0343 6467, exp 09/27", "4539 1488 0343 6467"),
        ("machine api.heroku.com\n  login dev@acme.io\n  password 8f3e2a1b-9c7d-4e6f-a5b4-c3d2e1f0a9b8x", "8f3e2a1b"),
        ("db.internal:5432:app:app_user:Wd9vKp2xRt", "Wd9vKp2xRt"),  # a .pgpass line
        # a second probe: a JWT after `auth=`, URL passwords holding @, "for X is", "set ... to", an encryption key
        (
            "Cookie: auth=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYm9iIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1g",
            "eyJ1c2VyIjoiYm9i",
        ),
        ("auth: eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYm9iIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1g", "dBjftJeZ4CVPmB92"),
        ("postgres://app:p@ssw0rd!x@db.internal:5432/app", "ssw0rd!x"),
        ("mysql://root:hunter@2024@10.0.0.5:3306/app", "2024@10"),
        ("redis://default:Qx9#mP2vL7@cache:6379", "mP2vL7"),
        ("the root password for prod is Xk9mP2vL7qR4", "Xk9mP2vL7qR4"),
        ("I set the admin password to Xk9mP2vL7qR4 for now.", "Xk9mP2vL7qR4"),
        ("encryption key: 7f3c9a2b8e1d4f6a0c5b9e2d7a1f3c8b6e4d2a9f1c7b5e3d", "7f3c9a2b8e1d4f6a0c5b"),
    ],
)
def test_secrets_as_answers_and_commands_write_them_are_redacted(text: str, secret: str) -> None:
    assert secret not in safe_text(text)


@pytest.mark.parametrize(
    "text",
    [  # ... and these look-alikes were redacted
        "private_key: /etc/ssl/private/api.key",
        "JWT_PRIVATE_KEY=/run/secrets/jwt.pem",
        "ansible-playbook site.yml --private-key=~/.ssh/deploy_ed25519",
        "encryption_key: alias/prod-data",
        "Wrap the bearer token TokenRefresherV2Client in a retry",
        "the API key is OPENAI_API_KEY_V2 in the CI settings",
        "merged branch sk-proj-billing-migration-2024 into main",
        "create db/migrate/20250115224625_create_users.rb",  # a timestamp that passes the card checksum
        ".oneOf([Yup.ref('password'), null], 'Passwords must match')",
        "The password is wrong; the password is required; the password is stored in 1Password.",
        "password reset\nlocalhost:5432:*:postgres:postgres",  # a heading's words; a .pgpass line of defaults
        "I changed the password to something stronger and set the PIN to expire yearly.",
        "the password for prod is stored in Vault",
        "see https://example.com:8080/docs and mail ops@example.com",
    ],
)
def test_paths_names_and_code_beside_secret_words_are_kept(text: str) -> None:
    assert safe_text(text) == text


# Generated passwords (16 characters, password managers' marks) that were kept: a `(` or `[` read as code, a leading
# `<`, `[`, `{`, `$`, `%24` or `/` read as a placeholder, a variable or a path, a `;` `,` `&` `|` `<` or `@` cutting
# the value short, no digit in a password said in words.
LAYOUTS = {
    "env": "DB_PASSWORD={p}",
    "export": "export API_TOKEN={p}",
    "json": '{{"password": "{p}"}}',
    "yaml": "password: {p}",
    "yaml-quoted": "password: '{p}'",
    "flag": "--password={p}",
    "connection": "Server=db;User Id=app;Password={p};",
    "url": "postgres://app:{p}@db.internal:5432/app",
    "words": "the db password is {p}",
}
GENERATED = [
    ("env", "Xk9m(P2vL7qR4tZ8"), ("env", "[Xk9mP2vL7qR4tZ8"), ("env", "/Xk9mP2vL7qR4tZ8"),
    ("env", "<a~5ID:nOdcd]*bW"), ("env", "lESWhSVPQeKwgHT("), ("env", "${T(Pap45SN*ZR|."),
    ("env", "Xk9mP2vL7qR4tZ8[0]"), ("export", "$ikprS54xfWH76uB"), ("json", "<Xk9mP2vL7qR4tZ8"),
    ("yaml", "e(d%}dEtAILli)F>"), ("yaml", "BkY&c$F*MiibghXy"), ("yaml", ":|-lJ<.l(El-xD,="),
    ("yaml", "$(KY85kadDYG#omu"), ("yaml-quoted", "XzNFUx_y.nGPdMbw"), ("flag", "@(vMjm~zzo@(/?&W"),
    ("flag", "V+mJ;MnSzBGL<>K]"), ("connection", "GP_/JQy,c(cCO!)F"), ("connection", "~#;zq|HZdPK_kAtU"),
    ("url", "%24Nlbsn89MblLKsmq"), ("url", "v?UW4~M/<3W=(V<T"), ("url", "@g*5)J!-e#Zf]zs<"),
    ("words", "lljaTdv_rS#[n=pZ"), ("words", "kncSAh&Wacn$BKHb"),
    ("words", "ZwVwsYpWIorgQObk"), ("words", "RVK-+/$L(&/W$(=I"),
]  # fmt: skip


def _survives(layout: str, password: str) -> bool:
    out = safe_text(LAYOUTS[layout].format(p=password))
    return any(password[i : i + 8] in out for i in range(len(password) - 7))


@pytest.mark.parametrize(("layout", "password"), GENERATED)
def test_a_generated_password_is_redacted_whatever_marks_it_holds(layout: str, password: str) -> None:
    assert not _survives(layout, password)


def test_generated_passwords_survive_in_under_one_in_a_hundred_settings() -> None:
    rng = random.Random(1)
    alphabet = string.ascii_letters + string.digits + "!#$%&()*+,-./:;<=>?@[]^_{|}~"
    for layout in LAYOUTS:
        passwords = ["".join(rng.choice(alphabet) for _ in range(16)) for _ in range(400)]
        passwords = [p.replace('"', "x").replace("'", "x") for p in passwords]
        kept = [p for p in passwords if _survives(layout, p)] + [
            p for p in passwords[:100] if layout == "url" and _survives(layout, quote(p, safe=""))
        ]
        assert len(kept) <= 4, (layout, kept[:3])


@pytest.mark.parametrize(
    "text",
    [  # references, placeholders, paths and prose: each shape kept whole (a password may only start like one)
        "password = get_password()",
        'password = os.environ["DB_PASSWORD"] and token = os.getenv("TOKEN")',
        "password = request.form['password']; api_key = config[:api][:key]; salt = os.urandom(16)",
        "token = secrets.token_hex(32)\ncredentials = ServiceAccountCredentials.from_p12_keyfile(",
        "password: ${DB_PASSWORD}\nDB_PASSWORD=$(cat /run/secrets/db) TOKEN=$GITHUB_TOKEN PW=$dbPassword",
        "PASSWORD=<your-password> and password: [REDACTED] and token: {token} and password: ********",
        'DB_PASSWORD=%PASSWORD% password = "%(password)s" password: "{{ vault_db_password }}"',
        "password_file: /run/secrets/db\nsecret_file=~/.config/app/secret\ntoken_path=/var/run/secrets/token",
        "reset the password for Carol; the password policy requires 12 chars",
        "The password is in 1Password. The password is (see the vault). The password is PostgreSQL's default.",
        "REDIS_AUTH=disabled AUTH=basic SESSION_COOKIE=sessionid SESSION_COOKIE_SECURE=True salt: 16 auth: oauth2",
        "const headers = new Headers({ 'set-cookie': 'undici=getSetCookies; Secure' })",
        "* `signature`: {ArrayBuffer|TypedArray|DataView|Buffer}\n* `privateKey`: {KeyObject}",
        "ALTER USER postgres WITH PASSWORD 'postgres'; ALTER USER app WITH PASSWORD :'pw';",
        "Users are identified by their email; CREATE USER bob IDENTIFIED BY 'password';",
        "git clone https://git@github.com/org/repo.git or https://john.smith@example.com/path",
        "sshpass -p $PASS ssh host; sshpass -f ~/.pw ssh host",
        "password: |\n  ${DB_PASSWORD}\ndescription: |\n  The token is rotated.",
    ],
)
def test_references_placeholders_paths_and_prose_beside_secret_words_are_kept(text: str) -> None:
    assert safe_text(text) == text


@pytest.mark.parametrize(
    "text",
    [  # ... and these were redacted
        "verify_signature(payload, headers, *, secret=None, tolerance=300); unwrap(payload, *, secret=None)",
        "DB_PASSWORD=${DB_PASSWORD:-changeme}",
        "password: !vault |",
    ],
)
def test_a_default_a_yaml_tag_and_code_closing_around_a_value_are_kept(text: str) -> None:
    assert safe_text(text) == text


def test_redacting_redacted_text_changes_nothing() -> None:
    layouts = [LAYOUTS[layout].format(p=password) for layout, password in GENERATED] + [
        f"OPENAI_API_KEY={SECRETS['openai-key']} and retry", "sshpass -pXk9mP2vL7qR4tZ8wN3bY ssh host",
        "password: |\n  Xk9mP2vL7qR4tZ8wN3bY", "ALTER USER app WITH PASSWORD 'Xk9mP2vL7qR4tZ8wN3bY';",
        "https://Xk9mP2vL7qR4tZ8wN3bY@github.com/o/r.git", "REDIS_AUTH=Xk9mP2vL7qR4tZ8wN3bY, then",
    ]  # fmt: skip
    for text in layouts:
        once = safe_text(text)
        assert safe_text(once) == once, text


def test_a_password_that_is_a_word_is_not_redacted_wherever_the_word_is_said() -> None:
    """`DB_PASSWORD=postgres` made every "postgres" of the note a secret: it could no longer be found by that word.
    Only a value that looks made is looked for again."""
    text = "Set DB_PASSWORD=postgres in .env, then restart postgres and run the postgres migrations."
    assert safe_text(text).count("postgres") == 2


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # a secret redacted in one place was kept where the text said it again in prose (an answer echoing a prompt)
        (
            "DATABASE_URL=postgres://shop_admin:Tr0ub4dor&3xK@db:5432/shop\n\n"
            "It fails because Tr0ub4dor&3xK holds an & that the shell ends the command at.",
            "3xK",
        ),
        ("postgres://shop_admin:Tr0ub4dor&3xK@db:5432/shop: psql only got `Tr0ub4dor`.", "Tr0ub4dor"),
        ("OPENAI_API_KEY=sk-proj-Q3k9ZpL2mX7vN4bR8tY1wE6u\nthe key Q3k9ZpL2mX7vN4bR8tY1wE6u is revoked", "Q3k9Zp"),
        # ... and a password named in prose without "is"
        ("db login: user shop_admin with password Tr0ub4dor&3xK (staging)", "Tr0ub4dor"),
        ("ssh deploy@10.0.0.5, password hunter2", "hunter2"),
        ("log in as admin with password `Gh7kLp2Qz` and check the queue", "Gh7kLp2Qz"),
        ("The password Tr0ub4dor&3xK contains an &, so quote it.", "Tr0ub4dor"),
        # ... and a login said as people write one (audit C: each was kept)
        ("user admin, pass Wq9rTz3Lk8Mn", "Wq9rTz3Lk8Mn"),
        ("staging login: admin / Wq9rTz3Lk8Mn", "Wq9rTz3Lk8Mn"),
        ("creds are admin:Wq9rTz3Lk8Mn on the staging box", "Wq9rTz3Lk8Mn"),
        # ... and a value after "password:" with words after it (audit H, 2: kept when it did not end the line)
        ("My password: Wr0ub4dor-and-3 for the guest network", "Wr0ub4dor"),
        ("API key: sk9f8KQ2mZ7pLw3Tq7 for staging, rotated monthly", "sk9f8KQ2mZ7pLw3Tq7"),
    ],
)
def test_a_secret_said_again_or_named_in_prose_is_redacted(text: str, secret: str) -> None:
    assert secret not in safe_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "hash the password with argon2 and store the password sha256 hash",
        "# Check The Password Confirmation With Yup",
        "reset the password PBKDF2-SHA256 style, then the password reset2 flow",
        "the password twice, with password confirmation; and password policy v2",
        "token=Q3k9ZpL2mX7vN4bR8tY1 and the order 4821 shipped",  # (only the value is said again: nothing else goes)
        "login: admin / dashboard, then pass the ball to team 2",
        "creds are in 1Password; credentials: see docs/creds.md; login at https://example.com/a1b2c3d4",
        "username: jsmith2024, pass hunter; user admin, pass: $DB_PASS; creds admin:YOUR_PASSWORD",
        "Login flow: OAuth2Callback now validates; the login page: LoginPageV2; credentials provider: AwsSdkV3",
        "The user model, pass UserDTOv2 to the serializer",
        "Password: reset flow broken on Safari since the 2.3 release",  # a label's first word, no value
        "Password: the usual one, in the team vault",
        # (review: names of algorithms, standards and models, and a year, after the colon are no secrets)
        "Password: PBKDF2-SHA256 with 600k iterations; password: Sha256 hashes must be salted.",
        "API key: GPT-4o needs a paid tier. Passphrase: XKCD-936 style is recommended; Password: Argon2id everywhere.",
        "Password: NIST-800-63B rules apply now. Password: WPA2-PSK with AES. PIN: 2024 rollout of chip cards",
    ],
)
def test_prose_about_passwords_and_text_beside_a_secret_are_kept(text: str) -> None:
    out = safe_text(text)
    assert out == text or out == "token=[redacted: secret] and the order 4821 shipped"


LOOSE_SECRETS = (  # (audit I, 2) a name that says secret, token, password or key other than by its last word
    *("DB_PASSWORD_PROD", "SECRET_KEY_BASE", "OPENAI_KEY", "AUTH_TOKEN_2", "SECRET_TOKEN_FOR_CI", "GH_TOKEN_CLASSIC"),
    *("WEBHOOK_SIGNING_SECRET_V2", "AZURE_STORAGE_KEY", "DD_APP_KEY", "LICENSE_KEY", "FIREBASE_PRIVATE_KEY_ID"),
    *("PASSWORD_HASH_PEPPER", "CF_API_TOKEN_RW"),
)
MADE = "9f3a7c21be4d8e06f5a2c9d17b3e8f40"


@pytest.mark.parametrize("name", LOOSE_SECRETS)
def test_a_setting_whose_name_says_secret_anywhere_has_a_made_value_redacted(name: str) -> None:
    for line in (f"{name}={MADE}", f"export {name}='{MADE}'", f"{name.lower()}: {MADE}", f'"{name}": "{MADE}"'):
        assert MADE not in safe_text(line) and "[redacted: secret]" in safe_text(line), line


def test_a_secret_given_after_a_space_to_a_flag_is_redacted_and_a_flag_named_in_prose_is_not() -> None:
    assert safe_text("APP_KEY=base64:Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE=") == "APP_KEY=[redacted: secret]"
    assert safe_text("run it with --password hunter2hunter2 today") == "run it with --password [redacted: secret] today"
    assert safe_text("deploy --api-key a1b2c3d4e5f6a7b8c9d0 --yes") == "deploy --api-key [redacted: secret] --yes"
    for kept in ("use the --password prompt", "--token $GH_TOKEN", "pass --password-stdin < file", "--max-tokens 4096"):
        assert safe_text(kept) == kept


@pytest.mark.parametrize(
    "kept",
    [
        *("KEY_COUNT=3", "PRIMARY_KEY=id", "SORT_KEY=created_at", "keyboard=us-intl", "TOKEN_TTL=3600"),
        *("PASSWORD_MIN_LENGTH=12", "MAX_TOKENS=4096", "TOKEN_TTL=15m", "SESSION_TOKEN_LIFETIME=1h30m"),
        *("PARTITION_KEY=user_id", "CACHE_KEY=user.profile", "TOKEN_TYPE=AccessToken", "REGION_KEY=us-east-1"),
        *("SECRET_NAME=prod-db-password", "TOKEN_EXPIRY=1735689600", "REQUIRE_PASSWORD_RESET=true", "--token-ttl 3600"),
        *("sort_key: created_at", '"token_type": "AccessToken"', "--secret-name prod-db", "UPLOAD_KEY_LIMIT=512MB"),
        # (the development sets: a key binding, a call, a flag after a flag)
        *('{ "key": "cmd+shift+k" }', "const objectWithoutKey = intermediateObject.omit({ key: true })"),
        "gpg --list-secret-keys --keyid-format=long",
    ],
)
def test_a_count_a_duration_a_boolean_or_a_name_under_such_a_setting_is_kept(kept: str) -> None:
    assert safe_text(kept) == kept


@pytest.mark.parametrize(
    "setting",
    [  # (review) what settings named for a token, a key or a password hold that is no secret: URLs, times, class paths,
        # algorithms, patterns, names with a version, flags of docker, aws and gpg
        "OAUTH_TOKEN_URL=https://oauth2.googleapis.com/token",
        "TOKEN_ISSUER=https://login.microsoftonline.com/common/v2.0",
        "token_url: https://oauth2.googleapis.com/token",
        "TOKEN_EXPIRY=2024-03-01T00:00:00Z",
        "PASSWORD_HASHERS=django.contrib.auth.hashers.Argon2PasswordHasher",
        "PASSWORD_HASHER=argon2id",
        "PASSWORD_REGEX=^(?=.*[A-Z]).{12,}$",
        "TOKEN_STORE=redis://localhost:6379/2",
        "CACHE_KEY=session:v2",
        "partitionKey: tenantId2",
        "apiKeyHeader: X-Api-Key-V2",
        "docker build --secret id=npmrc,src=$HOME/.npmrc .",
        "aws secretsmanager get-secret-value --secret-id prod/api-db-v2",
        "gpg --default-key 0x4AA4D6E3F1B2C3D4 --password-policy strong2024",
    ],
)
def test_a_url_a_time_a_name_or_a_pattern_under_a_loosely_named_setting_is_kept(setting: str) -> None:
    assert safe_text(setting) == setting
