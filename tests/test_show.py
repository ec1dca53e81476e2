"""The pass table's layout: exact text, at a terminal's usual 80 columns and narrower."""

from rich.console import Console

from relayviz_instrument.store import PassRecord
from relayviz_instrument.views.show import PassTable


SUMMARIES = {0: {"added": 279, "removed": 207, "changed": 3, "rewired": 0},
             14: {"added": 253, "removed": 43, "changed": 10, "rewired": 8}}


def _records():
    return [
        PassRecord(index=0, name="sequential", depth=1, duration_ms=10610.74, changed=True,
                   nodes_before=214, nodes_after=286),
        PassRecord(index=14, name="SimplifyInference", depth=2, parent=0, duration_ms=15.6, changed=True,
                   nodes_before=214, nodes_after=424),
        PassRecord(index=23, name="BackwardFoldScaleAxis", depth=5, parent=14, duration_ms=22.84,
                   changed=False, nodes_before=175, nodes_after=175),
        PassRecord(index=1612, name="tir.Simplify", depth=2, parent=0, duration_ms=0.25, ir="tir"),
        PassRecord(index=40, name="BrokenRewrite", depth=2, parent=0, duration_ms=1.0,
                   nodes_before=12, error="RuntimeError: boom"),
    ]


def _render(width, terminal=True):
    console = Console(width=width, color_system=None, record=True, force_terminal=terminal)
    console.print(PassTable(_records(), SUMMARIES), crop=False)
    return console.export_text()


def test_the_pass_table_fits_80_columns_without_cutting_numbers():
    # Widths: # 4 ("1612"), depth 5, ms 8 ("10,610.7"), changed 7, nodes 10, + 3, - 3, ~ 2,
    # eight 2-character separators: 58, which leaves the pass names 22 of the 80 columns. A name
    # too long keeps its start and its end, which tells passes apart.
    assert _render(80) == (
        "   #  pass                    depth        ms  changed       nodes    +    -   ~\n"
        "────────────────────────────────────────────────────────────────────────────────\n"
        "   0  sequential                  1  10,610.7    yes    214 -> 286  279  207   3\n"
        "  14    SimplifyInference         2      15.6    yes    214 -> 424  253   43  18\n"
        "  23          Back…ScaleAxis      5      22.8    no            175              \n"
        "1612    tir.Simplify              2       0.2     -                             \n"
        "  40    BrokenRewrite             2       1.0  failed           12              \n"
    )


def test_a_narrow_terminal_shortens_pass_names_first():
    text = _render(72)
    assert all(len(line) <= 72 for line in text.splitlines())
    assert "10,610.7" in text and "214 -> 424" in text and "279  207" in text and "failed" in text
    assert "  14    Sim…nference  " in text and "SimplifyInference" not in text  # 14 columns left


def test_a_wide_terminal_shows_every_name_whole():
    assert _render(200) == (
        "   #  pass                           depth        ms  changed       nodes    +    -   ~\n"
        "───────────────────────────────────────────────────────────────────────────────────────\n"
        "   0  sequential                         1  10,610.7    yes    214 -> 286  279  207   3\n"
        "  14    SimplifyInference                2      15.6    yes    214 -> 424  253   43  18\n"
        "  23          BackwardFoldScaleAxis      5      22.8    no            175              \n"
        "1612    tir.Simplify                     2       0.2     -                             \n"
        "  40    BrokenRewrite                    2       1.0  failed           12              \n"
    )


def test_piped_output_never_cuts_a_name_whatever_the_width():
    assert _render(40, terminal=False) == _render(200)
