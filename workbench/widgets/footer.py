"""The footer: Textual's, recomposed only when the keys it shows change.

Textual's Footer rebuilds its keys whenever the bindings may have changed (every focus
change, every screen switch), which is a compose, a mount and a restyle of a dozen
widgets. The views' shown keys rarely depend on the focused widget, so most of those
rebuilds would draw the same footer.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

from workbench.textual_internals import footer_keys_composed


class StrataFooter(Footer):
    """A Footer that skips rebuilding itself into the keys it already shows."""

    _shown: tuple | None = None

    def _signature(self, screen: Screen) -> tuple:
        active = screen.active_bindings
        keys = tuple(
            (binding.key, binding.action, binding.description, enabled, tooltip)
            for (_node, binding, enabled, tooltip) in active.values()
            if binding.show
        )
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        return keys, None if palette is None else (palette.enabled, self.show_command_palette)

    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            signature = self._signature(screen)
            if footer_keys_composed(self) and signature == self._shown:
                return
            self._shown = signature  # Footer.bindings_changed recomposes (after the next refresh)
        super().bindings_changed(screen)
