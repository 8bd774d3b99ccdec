"""Filters that keep text from the spec inert in the config files the roles write as root.

alicerce validates every such value against its grammar before a playbook exists (alicerce/spec/text.py);
these filters are the roles' own second check, so a value that got past it (a hand-edited group_vars
file, a variable passed with -e) fails the task instead of adding a line to /etc/fstab or an ``install``
command to /etc/modprobe.d. They refuse; they never try to repair.
"""

from __future__ import annotations

import re
from typing import Any

try:  # the controller's Ansible; the unit tests import this file without it
    from ansible.errors import AnsibleFilterError
except ImportError:  # pragma: no cover - exercised only without Ansible installed
    AnsibleFilterError = ValueError  # type: ignore[assignment,misc]

# one field of a config line: nothing that ends the field (whitespace), the line (a line break), the
# value (a quote), starts a comment ('#'), separates modprobe routes (';') or templates ('{')
_WORD = re.compile(r"[A-Za-z0-9._@:/=+,~-]+")
# an LNet route: NET [HOPS] GATEWAY_NID[:PRIORITY] (Lustre manual, "Configuring LNet routes")
_ROUTE = re.compile(r"[a-z][a-z0-9]* ([0-9]{1,3} )?[A-Za-z0-9.\[\],-]+@[a-z][a-z0-9]*(:[0-9]{1,3})?")

# LNet networks: NET[(IFACE,...)] joined by ',' such as o2ib0(ibrail0,ibrail1),tcp0
_NET = r"[a-z][a-z0-9]*(\([A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*\))?"
_NETWORKS = re.compile(rf"{_NET}(,{_NET})*")


def _shown(value: Any) -> str:
    return str(value).encode("unicode_escape").decode("ascii")[:80]


def config_word(value: Any, what: str = "value") -> str:
    """``value`` when it is one inert field of a config line (fstab, modprobe.d, BeeGFS); fails otherwise."""
    text = str(value)
    if not _WORD.fullmatch(text) or ".." in text.split("/"):
        raise AnsibleFilterError(f"alicerce refuses to write {what} {_shown(text)!r}: it would not stay one field of its config line")
    return text


def lnet_route(value: Any) -> str:
    """``value`` when it is one LNet route (it goes between the quotes of ``routes="..."``); fails otherwise."""
    text = str(value)
    if not _ROUTE.fullmatch(text):
        raise AnsibleFilterError(f"alicerce refuses to write LNet route {_shown(text)!r}: expected 'NET [HOPS] GATEWAY_NID[:PRIORITY]'")
    return text


def lnet_networks(value: Any) -> str:
    """``value`` when it is an LNet networks list (it goes between the quotes of ``networks="..."``); fails otherwise."""
    text = str(value)
    if not _NETWORKS.fullmatch(text):
        raise AnsibleFilterError(f"alicerce refuses to write LNet networks {_shown(text)!r}: expected NET(IFACE,...) joined by ','")
    return text


class FilterModule:
    """Filters for the alicerce roles (names prefixed ``alicerce_``)."""

    def filters(self) -> dict[str, Any]:
        return {"alicerce_config_word": config_word, "alicerce_lnet_route": lnet_route, "alicerce_lnet_networks": lnet_networks}
