"""What the resource loader finds: context files, skills, prompt templates, slash commands, prompt sections,
the project-trust decision and the diagnostics, with ``to_dict`` in pi's camelCase JSON shapes.

Plain data only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Command",
    "ContextFile",
    "Diagnostic",
    "DiagnosticKind",
    "PromptTemplate",
    "Scope",
    "Section",
    "Skill",
    "SourceInfo",
    "TrustDecision",
]

DiagnosticKind = Literal["warning", "collision", "error"]
Scope = Literal["user", "project", "temporary"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem met while loading, never fatal: ``warning`` (a file skipped or suspicious), ``collision``
    (a name already taken: ``name`` and the ``winner`` file that kept it; ``path`` lost), ``error`` (an
    explicit path that does not exist). ``path`` and ``line`` say where."""

    kind: DiagnosticKind
    message: str
    path: str | None = None
    line: int | None = None
    name: str | None = None
    winner: str | None = None

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict[str, Any]:
        """``{type, message, path?, line?, name?, winner?}``."""
        out: dict[str, Any] = {"type": self.kind, "message": self.message}
        for key, value in (
            ("path", self.path),
            ("line", self.line),
            ("name", self.name),
            ("winner", self.winner),
        ):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a resource came from, as pi's ``sourceInfo``: ``source`` is ``auto`` for a file found in a
    standard folder and ``local`` for an explicit path; ``base_dir`` is the folder it was found from."""

    path: str
    source: str
    scope: Scope
    origin: str = "top-level"
    base_dir: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{path, source, scope, origin, baseDir?}``."""
        out: dict[str, Any] = {
            "path": self.path,
            "source": self.source,
            "scope": self.scope,
            "origin": self.origin,
        }
        if self.base_dir is not None:
            out["baseDir"] = self.base_dir
        return out


@dataclass(frozen=True, slots=True)
class ContextFile:
    """An AGENTS.md-style file: absolute path and content (BOM stripped, otherwise untouched)."""

    path: str
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "content": self.content}


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill: its ``SKILL.md`` (or ``*.md``) file, the folder its relative paths resolve against, and
    whether it is hidden from the model (``disable-model-invocation: true``; still usable as ``/skill:name``)."""

    name: str
    description: str
    file_path: str
    base_dir: str
    source_info: SourceInfo
    disable_model_invocation: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "filePath": self.file_path,
            "baseDir": self.base_dir,
            "disableModelInvocation": self.disable_model_invocation,
            "sourceInfo": self.source_info.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A prompt template ``/name``: the file's body with ``$1``/``$@``/... placeholders."""

    name: str
    description: str
    content: str
    file_path: str
    source_info: SourceInfo
    argument_hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.argument_hint is not None:
            out["argumentHint"] = self.argument_hint
        out.update(content=self.content, filePath=self.file_path, sourceInfo=self.source_info.to_dict())
        return out


@dataclass(frozen=True, slots=True)
class Command:
    """One entry of pi's ``get_commands`` answer: a template (``source="prompt"``) or ``skill:{name}``."""

    name: str
    description: str
    source: Literal["prompt", "skill", "extension"]
    source_info: SourceInfo

    def to_dict(self) -> dict[str, Any]:
        """``{name, description, source, sourceInfo}``."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "sourceInfo": self.source_info.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Section:
    """One section of the system prompt: ``preamble`` is bare text, every other one is sent as
    ``<name>\\n{body}\\n</name>``."""

    name: str
    body: str

    @property
    def text(self) -> str:
        """The section as it appears in the prompt."""
        return self.body if self.name == "preamble" else f"<{self.name}>\n{self.body}\n</{self.name}>"


@dataclass(frozen=True, slots=True)
class TrustDecision:
    """Whether the project's ``.pi/`` resources (and ancestor ``.agents/skills``) are used.

    ``reason`` is one of ``approve`` (the flag), ``no_approve`` (the flag), ``nothing_to_trust`` (the
    project holds no trust-requiring resource), ``trust_file`` (an entry in ``<agent dir>/trust.json``:
    ``source`` names the folder), ``default_always`` / ``default_never`` (``defaultProjectTrust`` in
    ``<agent dir>/settings.json``) or ``not_interactive`` (``ask``, the default, means untrusted without a
    user to ask). ``skipped`` lists the resources left out because the project is untrusted.
    """

    trusted: bool
    reason: str
    needs_trust: bool
    source: str | None = None
    skipped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"trusted": self.trusted, "reason": self.reason, "needsTrust": self.needs_trust}
        if self.source is not None:
            out["source"] = self.source
        out["skipped"] = list(self.skipped)
        return out
