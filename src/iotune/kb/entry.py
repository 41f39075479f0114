"""One knowledge-base entry (a finished study, as remembered) and its JSON form. Below
iotune.kb.store (which keeps entries) and iotune.kb.validate (which checks them), which both
use it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from iotune.kb.signature import Signature


@dataclass
class Entry:
    """One finished study, as remembered."""

    signature: Signature
    settings: dict[str, str]  # the recommended (minimal) settings; {} when nothing was better
    space: str = ""
    speedup: float | None = None
    p_value: float | None = None
    spread: dict[str, Any] = field(default_factory=dict)  # pair ratios: min, median, max, n
    improved: bool = False
    study: str = ""
    command: str = ""
    source: str = ""  # where it came from: a study directory, an imported file
    created: str = ""  # ISO 8601, UTC
    # the study's other re-measured leaders, best first: {"settings", "median", "runs"}. On a
    # noisy machine the top few cannot be told apart, so a warm start tries them too.
    leaders: list[dict[str, Any]] = field(default_factory=list)
    # the study's identity (iotune.study.STUDY_UID): a study finished again replaces its entry
    # (KnowledgeBase.put); "" for an entry of an older iotune or of another source
    study_uid: str = ""
    # the study's headline (iotune.verdict), measured on these settings: low, high, confidence,
    # wins, pairs, established, text; {} for an entry of an older iotune
    verdict: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    @property
    def uid(self) -> str:
        """From the content, not the date: the same study filed twice (by `iotune tune` and
        again by `kb add`, or imported twice) is one entry."""
        content = [self.signature.to_json(), self.settings, self.space, self.study,
                   self.command, self.speedup, self.p_value]  # fmt: skip
        if self.study_uid:  # (an entry without one keeps the uid it always had)
            content.append(self.study_uid)
        text = json.dumps(content, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "created": self.created,
            "study": self.study,
            "command": self.command,
            "source": self.source,
            "space": self.space,
            "signature": self.signature.to_json(),
            "settings": dict(self.settings),
            "improved": self.improved,
            "speedup": self.speedup,
            "p_value": self.p_value,
            "spread": dict(self.spread),
            "leaders": [dict(x) for x in self.leaders],
            **({"study_uid": self.study_uid} if self.study_uid else {}),
            "verdict": dict(self.verdict),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        if not isinstance(data, Mapping):
            raise ValueError("an entry must be an object")
        settings = data.get("settings")
        if not isinstance(settings, Mapping):
            raise ValueError("an entry needs a 'settings' object")
        return cls(
            signature=Signature.from_json(data.get("signature") or {}),
            settings={str(k): str(v) for k, v in settings.items()},
            space=str(data.get("space") or ""),
            speedup=_number(data.get("speedup")),
            p_value=_number(data.get("p_value")),
            spread=dict(data.get("spread") or {}),
            improved=bool(data.get("improved")),
            study=str(data.get("study") or ""),
            command=str(data.get("command") or ""),
            source=str(data.get("source") or ""),
            created=str(data.get("created") or ""),
            leaders=_leaders(data.get("leaders") or []),
            study_uid=str(data.get("study_uid") or ""),
            verdict=dict(data.get("verdict") or {}),
        )


def _leaders(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(
        isinstance(x, Mapping) and isinstance(x.get("settings"), Mapping) for x in data
    ):
        raise ValueError("an entry's 'leaders' must be a list of objects with 'settings'")
    return [
        {
            "settings": {str(k): str(v) for k, v in x["settings"].items()},
            "median": _number(x.get("median")),
            "runs": int(x.get("runs") or 0),
        }
        for x in data
    ]


def _number(x: Any) -> float | None:
    if x is None:
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"not a number: {x!r}") from None
