"""Every policy key the documentation, the deployment files and the example policies name exists.

An operator copies key names from these files into WORKFLOW.md, where an
unknown one stops the daemon. The scan reads the example policies' front
matter, fenced ``yaml`` blocks and front matter shown in ``markdown`` blocks,
dotted names in backticks in prose (`agent.max_turns`), and dotted names
anywhere in the deployment files that are not Markdown (unit comments, compose
comments). A dotted name counts as a key only when its first part is a
top-level section of the policy and it is not a file name (`merge.md`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from orchestrator.workflow.catalog import Kind, groups, settings, suggestion
from orchestrator.workflow.import_symphony.keys import FOREIGN_KEYS

ROOT = Path(__file__).resolve().parents[2]
# A dotted name standing on its own: not part of a path, a URL or a longer dotted name.
DOTTED = re.compile(r"(?<![\w./$-])([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+)(?![\w/-])")
BACKTICKS = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$")
# Names ending like these are files (`merge.md`, `review.md`), not keys.
FILE_ENDINGS = frozenset(
    {"md", "py", "yaml", "yml", "json", "toml", "txt", "sh", "db", "env", "service", "html"}
)


@dataclass(frozen=True)
class NamedKey:
    """A policy key as a file names it."""

    path: Path
    line: int
    key: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.key}"


def sections() -> frozenset[str]:
    return frozenset(groups()[""])


def is_known(key: str) -> bool:
    """A setting, a section or group of settings, an entry of a mapping setting, or a key of
    Symphony's dialect (the docs map those to ours; the loader reads them with a warning)."""
    if key in settings() or key in groups() or key in FOREIGN_KEYS:
        return True
    parts = key.split(".")
    for end in range(len(parts) - 1, 0, -1):
        spec = settings().get(".".join(parts[:end]))
        if spec is not None:
            return spec.type.kind is Kind.MAP
    return False


def looks_like_a_key(name: str) -> bool:
    first, *_, last = name.split(".")
    return first in sections() and last not in FILE_ENDINGS


def dotted_names(text: str) -> Iterator[str]:
    for found in DOTTED.finditer(text):
        if looks_like_a_key(found.group(1)):
            yield found.group(1)


def policy_keys(mapping: CommentedMap, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each key of a policy mapping with its line (0-based, within the YAML text)."""
    for name in mapping:
        key = f"{prefix}{name}"
        line = mapping.lc.key(name)[0]
        yield key, line
        value = mapping[name]
        if key not in settings() and key in groups() and isinstance(value, CommentedMap):
            yield from policy_keys(value, key + ".")


def yaml_keys(path: Path, text: str, first_line: int, *, always: bool) -> Iterator[NamedKey]:
    """The policy keys of a YAML text starting at ``first_line`` of ``path``.

    Unless ``always`` (an example policy), only a mapping with at least one
    policy section at its top is a policy; other YAML (a workpad, a scenario,
    a compose file) is not.
    """
    try:
        loaded: Any = YAML(typ="rt").load(text)
    except YAMLError as error:
        if always:
            pytest.fail(f"{path.relative_to(ROOT)}:{first_line}: not YAML: {error}")
        return
    if not isinstance(loaded, CommentedMap):
        return
    if not always and not sections() & {str(k) for k in loaded}:
        return
    for key, line in policy_keys(loaded):
        yield NamedKey(path, first_line + line, key)


def front_matter(lines: list[str]) -> tuple[int, str] | None:
    """The index of the first line of the front matter and its text, when there is one."""
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None or lines[start].strip() != "---":
        return None
    for end in range(start + 1, len(lines)):
        if lines[end].strip() == "---":
            return start + 1, "\n".join(lines[start + 1 : end])
    return None


def markdown_keys(path: Path, text: str) -> Iterator[NamedKey]:
    """Keys in a Markdown file: its front matter, yaml blocks, shown front matter, prose."""
    lines = text.splitlines()
    matter = front_matter(lines)
    body_start = 0
    if matter is not None:
        start, yaml_text = matter
        yield from yaml_keys(path, yaml_text, start + 1, always=True)
        body_start = start + len(yaml_text.splitlines()) + 1
        for number in range(start, body_start):
            comment = lines[number].partition("#")[2]
            yield from (NamedKey(path, number + 1, k) for k in dotted_names(comment))
    fence: str | None = None
    info = ""
    block: list[str] = []
    block_start = 0
    for index in range(body_start, len(lines)):
        line = lines[index]
        opened = FENCE.match(line)
        if fence is None:
            if opened:
                fence, info, block, block_start = opened.group(1), opened.group(2), [], index + 1
                continue
            for span in BACKTICKS.findall(line):
                yield from (NamedKey(path, index + 1, k) for k in dotted_names(span))
            continue
        closes = (
            opened is not None
            and not opened.group(2)
            and opened.group(1)[0] == fence[0]
            and len(opened.group(1)) >= len(fence)
        )
        if not closes:
            block.append(line)
            continue
        yield from fenced_keys(path, info, block, block_start)
        fence = None


def fenced_keys(path: Path, info: str, block: list[str], first: int) -> Iterable[NamedKey]:
    if info in ("yaml", "yml"):
        text = "\n".join(line for line in block if line.strip() != "---")
        return yaml_keys(path, text, first + 1, always=False)
    if info in ("markdown", "md"):
        matter = front_matter(block)
        if matter is not None:
            return yaml_keys(path, matter[1], first + matter[0] + 1, always=True)
    return ()


def plain_keys(path: Path, text: str) -> Iterator[NamedKey]:
    """Keys named anywhere in a file that is not Markdown (comments of a unit or compose file)."""
    for number, line in enumerate(text.splitlines(), start=1):
        yield from (NamedKey(path, number, k) for k in dotted_names(line))


def named_keys(path: Path) -> list[NamedKey]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return list(markdown_keys(path, text))
    return list(plain_keys(path, text))


def scanned_files() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("deploy", "workflows"):
        found += sorted(p for p in (ROOT / folder).rglob("*") if p.is_file())
    return found


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_policy_key_named_exists(path: Path) -> None:
    unknown = [
        f"{named}: not a policy key{suggestion(named.key, settings())}"
        for named in named_keys(path)
        if not is_known(named.key)
    ]
    assert not unknown, "\n".join(unknown)


def test_the_scan_finds_the_keys_the_files_name() -> None:
    everywhere = {n.key for p in scanned_files() for n in named_keys(p)}
    # In prose, in the unit's comments, in yaml blocks, and in the examples' front matter.
    assert {
        "agent.shutdown_grace_ms",
        "agent.max_turns",
        "agent.home",
        "tracker.repo",
        "database.url",
        "orchestration.ownership.required_label",
    } <= everywhere


# -------------------------------------------------------------------- the scan itself

SAMPLE = """\
Set `agent.max_turn` (see `merge.md` and `.orchestrator/review.md:3`), and
`server.host:server.port`; `agent.env.home` is an entry; `hooks.*` is every hook.

```yaml
agent:
  max_turns: 3
  env:
    ANY_NAME: x
  stop_grace_ms: 100
```

```yaml
orchestrator:
  phase: blocked
```

```markdown
---
rollout:
  mdoe: observe
---
The prompt.
```

```sh
orchestrator validate --set agnt.max_turns=5
```
"""


def test_the_scan_names_file_line_and_key(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(SAMPLE)
    found = [(n.line, n.key) for n in markdown_keys(page, SAMPLE)]
    assert found == [
        (1, "agent.max_turn"),
        (2, "server.host"),
        (2, "server.port"),
        (2, "agent.env.home"),
        (5, "agent"),
        (6, "agent.max_turns"),
        (7, "agent.env"),
        (9, "agent.stop_grace_ms"),
        (19, "rollout"),
        (20, "rollout.mdoe"),
    ]
    assert [k for _, k in found if not is_known(k)] == [
        "agent.max_turn",
        "agent.stop_grace_ms",
        "rollout.mdoe",
    ]


def test_a_unit_comment_is_scanned(tmp_path: Path) -> None:
    unit = tmp_path / "orchestrator.service"
    text = "# the grace (agent.shutdown_grace_ms; agent.grace_ms) in orchestrator.env\nX=1\n"
    found = [(n.line, n.key) for n in plain_keys(unit, text)]
    assert found == [(1, "agent.shutdown_grace_ms"), (1, "agent.grace_ms")]
    assert not is_known("agent.grace_ms") and is_known("agent.shutdown_grace_ms")
