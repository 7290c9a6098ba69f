"""CSV cells that a spreadsheet would run as a formula are neutralised, whatever form the sign takes."""

import pytest

from metrics.exports import neutralise_formula


@pytest.mark.parametrize(
    "text",
    [
        "=1+1",
        "+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1)",
        "\tx",
        "\rx",
        "\nx",
        "|calc",
        '＝HYPERLINK("http://x")',
        "＋1",
        "－1",
        "＠SUM(A1)",
        "｜cmd",
        "﹦1+1",
        "﹢1",
        "﹣1",
        "\u22121",
        " =1+1",
        "\u3000＝1+1",
        "\u00a0@A1",
    ],
)
def test_formula_starts_are_neutralised(text):
    assert neutralise_formula(text) == "'" + text


@pytest.mark.parametrize("text", ["ok", "a=b", "", "   ", "1,5", "'already", "“quoted”", "Ｈｅｌｌｏ", "ー長音"])
def test_plain_text_is_left_alone(text):
    assert neutralise_formula(text) == text
