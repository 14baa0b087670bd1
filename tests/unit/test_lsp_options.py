"""What the language server takes for its settings from what a client sends (lsp/convert.py options_from)."""

from __future__ import annotations

from memsearch_lsp.lsp.convert import options_from


def test_the_settings_section_is_told_by_any_key_of_ours() -> None:
    """(review P, 1) A misspelt key beside ours, the `lsp` section or a snake_case key made the whole object nobody's
    (every setting dropped, nothing said); another server's section alone (eglot's whole configuration) is not ours."""
    assert options_from({"memsearch": {"search": {"topK": 2}}}) == {"search": {"topK": 2}}
    assert options_from({"search": {"topK": 7}, "serach": {"x": 1}}) == {"search": {"topK": 7}, "serach": {"x": 1}}
    assert options_from({"lsp": {"showNotifications": False}}) == {"lsp": {"showNotifications": False}}
    assert options_from({"show_notifications": False, "search.topK": 3}) == {
        "show_notifications": False,
        "search.topK": 3,
    }
    assert options_from({"interpreter": ["python3"]}) == {"interpreter": ["python3"]}
    assert options_from({"pylsp": {"plugins": {"ruff": {"enabled": True}}}}) == {}
    assert options_from(None) == options_from([1]) == options_from({}) == {}
