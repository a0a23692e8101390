"""The TUI's colour themes (``--theme``, and the command palette): Textual's dark and light, and a
high-contrast one for a lecture on a washed-out projector (black on white would glare; white, yellow
and cyan on black keep every mark readable)."""
from __future__ import annotations

from textual.theme import Theme

HIGH_CONTRAST = Theme(
    name="kdebug-high-contrast", primary="#ffff00", secondary="#00ffff", accent="#ffff00", warning="#ffaf00",
    error="#ff5f5f", success="#5fff5f", foreground="#ffffff", background="#000000", surface="#000000",
    panel="#262626", boost="#303030", dark=True,
    variables={"text-muted": "#d0d0d0", "border": "#ffffff", "block-cursor-background": "#ffff00",
               "block-cursor-foreground": "#000000", "footer-key-foreground": "#ffff00"})

# --theme NAME: Textual's theme of that name
THEMES = {"dark": "textual-dark", "light": "textual-light", "high-contrast": HIGH_CONTRAST.name}
