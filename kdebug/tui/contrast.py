"""The high-contrast theme's last step: every glyph at least 7:1 against its background (WCAG's AAA
ratio), whatever drew it.

A theme sets colours, but much of the screen is not the theme's: Textual dims ``dim`` text by blending it
into its background, its tabs draw inactive labels at half strength, the syntax colours are the code
views' own. On a washed-out projector those read as grey on black (inactive tabs 4.6:1, comments 5.3:1,
the tree's unfocused selection 3.1:1). ``ContrastFilter`` is a Textual line filter run after Textual's own
(which resolve ``dim`` and the ANSI colours to RGB): a colour pair below the ratio has its text moved
toward white (or black, on a light background) until it passes, and where the text is already at the end
of that road, its background the other way.
"""
from __future__ import annotations

from functools import lru_cache

from rich.color import Color as RichColor
from rich.color import ColorSystem
from rich.segment import Segment
from rich.style import Style
from textual.filter import LineFilter

MIN_RATIO = 7.0


def luminance(rgb: tuple[int, int, int]) -> float:
    def linear(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = rgb
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _toward(rgb: tuple[int, int, int], end: int, t: float) -> tuple[int, int, int]:
    return tuple(round(c + (end - c) * t) for c in rgb)  # type: ignore[return-value]


def palette_256(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The colour a 256-colour terminal shows for ``rgb`` (Rich's nearest palette entry)."""
    shown = RichColor.from_rgb(*rgb).downgrade(ColorSystem.EIGHT_BIT).get_truecolor()
    return (shown.red, shown.green, shown.blue)


@lru_cache(4096)
def legible(fg: tuple[int, int, int], bg: tuple[int, int, int],
            eight_bit: bool = False) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(fg, bg)`` moved apart just enough for ``MIN_RATIO`` (unchanged where they pass), judged as the
    terminal shows them (``eight_bit``: its 256 colours, which may bring two colours closer)."""
    shown = palette_256 if eight_bit else (lambda rgb: rgb)

    def passes(a, b) -> bool:
        return ratio(shown(a), shown(b)) >= MIN_RATIO

    if passes(fg, bg):
        return fg, bg
    up = luminance(fg) >= luminance(bg) or luminance(bg) < 0.18  # light text on a dark ground
    end = 255 if up else 0
    for step in range(1, 21):
        moved = _toward(fg, end, step / 20)
        if passes(moved, bg):
            return moved, bg
    fg = _toward(fg, end, 1.0)
    for step in range(1, 21):
        ground = _toward(bg, 255 - end, step / 20)
        if passes(fg, ground):
            return fg, ground
    return fg, _toward(bg, 255 - end, 1.0)


class ContrastFilter(LineFilter):
    """Every segment's text and background at ``MIN_RATIO`` or more (see the module's text);
    ``eight_bit``: the terminal has 256 colours (Textual's console says which)."""

    def __init__(self, eight_bit: bool = False) -> None:
        super().__init__()
        self.eight_bit = eight_bit

    def after(self, filters, console) -> list:
        """Textual's line ``filters``, then this one, judged in the colours ``console`` writes (256 where
        the terminal has no more)."""
        self.eight_bit = console.color_system in ("256", "standard", "windows")
        return [*filters, self]

    @lru_cache(4096)
    def _style(self, style: Style, background: RichColor | None) -> Style:
        color, bgcolor = style.color, style.bgcolor or background
        if color is None or bgcolor is None or color.triplet is None or bgcolor.triplet is None:
            return style
        fg, bg = tuple(color.triplet), tuple(bgcolor.triplet)
        if style.reverse:  # the terminal swaps them: the text is drawn in the background's colour
            bg_new, fg_new = legible(bg, fg, self.eight_bit)
        else:
            fg_new, bg_new = legible(fg, bg, self.eight_bit)
        if (fg_new, bg_new) == (fg, bg):
            return style
        return style + Style(color=RichColor.from_rgb(*fg_new),
                             bgcolor=RichColor.from_rgb(*bg_new) if style.bgcolor is not None or bg_new != bg else None)

    def apply(self, segments: list[Segment], background) -> list[Segment]:
        back = RichColor.from_rgb(*background.rgb) if background is not None else None
        out = []
        for segment in segments:
            style = segment.style
            if style is None or segment.control:
                out.append(segment)
                continue
            new = self._style(style, back)
            out.append(segment if new is style else Segment(segment.text, new, segment.control))
        return out
