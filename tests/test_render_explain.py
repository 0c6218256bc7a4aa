"""``evspec explain``: pages built from the code catalogue, close matches for unknown codes."""

from __future__ import annotations

import pytest

from evspec import codes
from evspec.codes import CodeInfo
from evspec.render.explain import explain, list_codes

CATALOGUE = {
    "ES012": CodeInfo("ES012", "repeated modifier", "A modifier letter appears twice.\nperf says 'Bad modifier'.",
                      "cycles:uu", "Write each modifier once.\nOrder does not matter."),
    "ES013": CodeInfo("ES013", "unknown modifier", "A letter that is no modifier."),
    "EB030": CodeInfo("EB030", "wrong value type for a map term", ".value takes a number."),
    "WM001": CodeInfo("WM001", "event may not exist", "Checked against a snapshot.", fix="Refresh it."),
}


@pytest.fixture(autouse=True)
def fixed_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codes, "catalogue", lambda: dict(CATALOGUE))


def test_page_has_title_explanation_example_and_fix() -> None:
    assert explain("ES012") == (
        "ES012: repeated modifier\n"
        "========================\n"
        "\n"
        "A modifier letter appears twice.\n"
        "perf says 'Bad modifier'.\n"
        "\n"
        "Example:\n"
        "    cycles:uu\n"
        "\n"
        "Fix:\n"
        "    Write each modifier once.\n"
        "    Order does not matter."
    )


def test_codes_are_case_insensitive() -> None:
    assert explain("es012") == explain("ES012")


def test_sections_without_content_are_left_out() -> None:
    page = explain("ES013")
    assert "Example:" not in page and "Fix:" not in page
    page = explain("WM001")
    assert "Example:" not in page and page.endswith("Fix:\n    Refresh it.")


def test_unknown_code_lists_close_matches() -> None:
    with pytest.raises(KeyError) as info:
        explain("ES014")
    message = info.value.args[0]
    assert message.startswith("unknown diagnostic code 'ES014'; did you mean ")
    assert "ES012" in message and "ES013" in message and "WM001" not in message


def test_unknown_code_without_close_match() -> None:
    with pytest.raises(KeyError) as info:
        explain("nonsense")
    assert info.value.args[0] == "unknown diagnostic code 'nonsense'; 'evspec explain' lists all codes"


def test_list_codes_is_sorted_and_aligned() -> None:
    assert list_codes() == (
        "EB030  wrong value type for a map term\n"
        "ES012  repeated modifier\n"
        "ES013  unknown modifier\n"
        "WM001  event may not exist"
    )


def test_list_codes_of_an_empty_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codes, "catalogue", dict)
    assert list_codes() == ""
