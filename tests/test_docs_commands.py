"""Every command the README, docs/ and BENCHMARKS.md show is one the tool accepts.

Fenced `bash` blocks are read as a shell reads them (comments, line continuations, `&&`, variables set
before a command), and each command's program must be one this module knows how to check:

- `sweep`: parsed by the CLI's own parser, so an unknown verb or flag, a missing argument or a bad value
  fails; the cheap ones also run for real: `--help`, the spec's validation for `run`, `base` and `trial`, and
  `promote plan` and `jobs list` on `runs/lr_mix`, a finished sweep written here with the sweep's own types;
- the repository's scripts (install.sh, benchmarks/): present, and every flag one that their parser declares;
- pytest: the test files named exist; torchrun: torch's own parser, then the program it starts;
- other projects' programs (W&B's CLI, optuna-dashboard, Megatron-Bridge's converter): named in EXTERNAL.

Inline code that starts with `sweep` (`sweep promote plan RUN --target T --calibrate`) is a fragment with
placeholders: each verb in it must exist, and each flag must be listed in that verb's `--help`.
A path into the repository (search_spaces/, tests/, benchmarks/, ...) must exist wherever it is named.
A `yaml` block is a part of a spec: each of its keys must be a key of the spec at that place.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch.distributed.run
import yaml
from pydantic import BaseModel

from cli import build_parser, main
from sweep.spec.spec import SweepSpec, load_spec
from tests.sweep.promote.promote_runs import write_run

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md")))
SHELL_FENCE = re.compile(r"^\s*```(bash|sh|shell)\s*$")
YAML_FENCE = re.compile(r"^\s*```ya?ml\s*$")
FENCE = re.compile(r"^\s*```")
INLINE_SWEEP = re.compile(r"`((?:\.venv/bin/)?sweep [^`]+)`")
OPERATORS = {"&&", "||", ";", "|", "&"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
REPO_DIRS = ("search_spaces/", "tests/", "benchmarks/", "data/", "docs/", "sweep/", "train_entry/", "reports/", "cli/")
"""A word starting with one of these names a file of the repository, which must exist."""
SWEEP = ("sweep", ".venv/bin/sweep")
PYTEST = ("pytest", ".venv/bin/pytest")
PYTHON = ("python", ".venv/bin/python")
FINISHED_RUN = "runs/lr_mix"
"""The run directory that real `promote plan` and `jobs list` commands are run on: the default sweep's."""
EXTERNAL = {
    "wandb": "W&B's command line, installed with the wandb dependency",
    ".venv/bin/optuna-dashboard": "optuna-dashboard, the dashboard extra's program",
    "./scripts/conversion/convert.sh": "Megatron-Bridge's converter, run from a Megatron-Bridge checkout",
}
"""Programs of other projects the docs show: their flags are those projects' own."""


class NotAccepted(Exception):
    """A command the docs show that the tool would refuse, or a program this module does not know."""


@dataclass(frozen=True)
class DocCommand:
    where: str
    """file:line of the command's first line."""
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where} {shlex.join(self.argv)}"


# ------------------------------------------------------------------------------------------ reading the docs


def fenced_blocks(path: Path, opening: re.Pattern) -> list[list[tuple[int, str]]]:
    """The numbered lines of every fenced block whose opening line matches `opening`."""
    blocks: list[list[tuple[int, str]]] = []
    block: list[tuple[int, str]] | None = None
    wanted = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if block is None and FENCE.match(line):
            block, wanted = [], bool(opening.match(line))
        elif block is not None and FENCE.match(line):
            blocks += [block] if wanted else []
            block = None
        elif block is not None:
            block.append((number, line))
    return blocks


def fenced_commands(path: Path) -> list[DocCommand]:
    """The commands of every bash block in the markdown file."""
    return [command for block in fenced_blocks(path, SHELL_FENCE) for command in _shell_commands(path.name, block)]


def _shell_commands(name: str, block: list[tuple[int, str]]) -> list[DocCommand]:
    """A block's lines joined where they end in a backslash, split into words and at `&&`, `;`, `|`."""
    commands, text, start = [], "", 0
    for number, line in block:
        start = start or number
        if line.rstrip().endswith("\\"):
            text += line.rstrip()[:-1] + " "
            continue
        lexer = shlex.shlex(text + line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        argv: list[str] = []
        for word in [*lexer, ";"]:
            if word in OPERATORS:
                commands += [DocCommand(f"{name}:{start}", tuple(argv))] if argv else []
                argv = []
            else:
                argv.append(word)
        text, start = "", 0
    return commands


def inline_fragments(path: Path) -> list[DocCommand]:
    """Inline code naming a sweep verb, as its words (placeholders and `[--optional]` brackets kept)."""
    fragments = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for match in INLINE_SWEEP.finditer(line):
            fragments.append(DocCommand(f"{path.name}:{number}", tuple(match.group(1).split())))
    return fragments


# ------------------------------------------------------------------------------------------ checking one command


def check(command: DocCommand, finished: Path) -> None:
    """Raises NotAccepted naming what the tool would refuse; `finished` holds runs/lr_mix, a finished sweep."""
    if any("<" in word or ">" in word for word in command.argv):
        raise NotAccepted(f"{command}: `<` and `>` are shell redirections; write a value a reader can paste")
    argv = list(command.argv)
    while argv and (ASSIGNMENT.match(argv[0]) or argv[0] == "time"):
        argv.pop(0)  # VAR=value before a command sets its environment; `time` times it
    if not argv:
        return
    program, args = argv[0], argv[1:]
    _check_repo_paths(command, args)
    if program == "export":
        if not all(ASSIGNMENT.match(word) for word in args):
            raise NotAccepted(f"{command}: export takes NAME=VALUE words")
    elif program in SWEEP:
        _check_sweep(command, args, finished)
    elif program in PYTEST:
        return  # its flags are pytest's; the test files it names are checked above
    elif program in PYTHON:
        _check_python(command, args)
    elif program == "torchrun":
        _check_torchrun(command, args)
    elif program in EXTERNAL:
        _check_external(command, program)
    elif (REPO / program).is_file():
        _check_repo_script(command, REPO / program, args)
    else:
        raise NotAccepted(f"{command}: {program} is no program of this repository, nor one EXTERNAL names")


def _check_repo_paths(command: DocCommand, words: list[str]) -> None:
    for word in words:
        path = word.split("=", 1)[-1].split("::")[0]  # --spec=search_spaces/x.yaml, tests/x.py::test_y
        if path.startswith(REPO_DIRS) and "*" not in path and not (REPO / path).exists():
            raise NotAccepted(f"{command}: {path} does not exist in the repository")


def _parse(args: list[str]) -> tuple[int, str]:
    """The CLI parser's verdict on the words: (0, '') when they parse, else argparse's exit code and message;
    --help answers (0, the help text)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(args)
        except SystemExit as exit:
            return int(exit.code or 0), (out.getvalue() if not exit.code else err.getvalue().strip().splitlines()[-1])
    return 0, ""


def _check_sweep(command: DocCommand, args: list[str], finished: Path) -> None:
    code, message = _parse(args)
    if code:
        raise NotAccepted(f"{command}: {message}")
    if "--help" in args or "-h" in args:
        return
    verb, spec = args[0], Path(args[1]) if len(args) > 1 else None
    if verb in ("run", "base", "trial") and spec is not None and (REPO / spec).is_file():
        load_spec(REPO / spec)  # what each of them does first: validate the spec and its corpora
    elif args[:2] in (["promote", "plan"], ["jobs", "list"]) and FINISHED_RUN in args:
        _run_on_finished_sweep(command, args, finished)


def _run_on_finished_sweep(command: DocCommand, args: list[str], finished: Path) -> None:
    absolute = [str(REPO / word) if word.startswith(REPO_DIRS) else word for word in args]
    err = io.StringIO()
    with contextlib.chdir(finished), contextlib.redirect_stderr(err):
        code = main(absolute)
    if code != 0:
        raise NotAccepted(f"{command}: exit code {code} on a finished sweep: {err.getvalue().strip()}")


def _declared_flags(script: Path) -> set[str]:
    """The option strings a Python program's argparse calls declare (`add_argument("--steps", ...)`)."""
    flags = {"-h", "--help"}
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            flags |= {arg.value for arg in node.args if isinstance(arg, ast.Constant) and str(arg.value)[:1] == "-"}
    return flags


def _check_flags(command: DocCommand, args: list[str], declared: set[str], program: str) -> None:
    unknown = [word for word in args if word.startswith("-") and word.split("=")[0] not in declared]
    if unknown:
        raise NotAccepted(f"{command}: {program} declares no {', '.join(unknown)}")


def _check_python(command: DocCommand, args: list[str]) -> None:
    if args[:1] == ["-m"]:
        module = REPO.joinpath(*args[1].split("."))
        script = module / "__main__.py" if module.is_dir() else module.with_suffix(".py")
        rest = args[2:]
    else:
        script, rest = REPO / args[0], args[1:]
    if not script.is_file():
        raise NotAccepted(f"{command}: {script.relative_to(REPO)} is no program of this repository")
    _check_flags(command, rest, _declared_flags(script), str(script.relative_to(REPO)))


def _check_torchrun(command: DocCommand, args: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parsed = torch.distributed.run.get_args_parser().parse_args(args)
        except SystemExit:
            raise NotAccepted(f"{command}: torchrun: {err.getvalue().strip().splitlines()[-1]}") from None
    program = ["-m", parsed.training_script] if parsed.module else [parsed.training_script]
    _check_python(command, [*program, *parsed.training_script_args])


def _check_external(command: DocCommand, program: str) -> None:
    if program.startswith(".venv/bin/") and not (Path(sys.prefix) / "bin" / Path(program).name).is_file():
        raise NotAccepted(f"{command}: {program} is not installed ({EXTERNAL[program]})")


def _check_repo_script(command: DocCommand, script: Path, args: list[str]) -> None:
    """A shell script of the repository: executable, and every flag one its `case` accepts (`--test)`)."""
    if not script.stat().st_mode & 0o100:
        raise NotAccepted(f"{command}: {script.relative_to(REPO)} is not executable")
    declared = set(re.findall(r"^\s*(--?[\w-]+)\)", script.read_text(), re.MULTILINE))
    _check_flags(command, args, declared, str(script.relative_to(REPO)))


def check_fragment(fragment: DocCommand) -> None:
    """Inline `sweep VERB ... --flag` text: its verbs exist and every flag is in the last verb's --help."""
    words = [word.strip("[]|,.") for word in fragment.argv[1:]]
    verbs: list[str] = []
    for word in (word for word in words if word and not word.startswith("-")):
        code, text = _parse([*verbs, word, "--help"])
        if code == 0 and text.startswith(f"usage: sweep {' '.join([*verbs, word])} "):
            verbs.append(word)
            continue
        if code and word.islower() and word.isalpha():
            raise NotAccepted(f"{fragment}: `sweep {' '.join(verbs)}` has no verb {word}")
        break  # a placeholder (RUN, SPEC) or an argument: the verbs end here
    listed = set(re.findall(r"(?<![\w-])--?[\w-]+", " ".join(_option_lines(verbs))))
    _check_flags(fragment, [word for word in words if word.startswith("-")], listed, f"sweep {' '.join(verbs)}")


def _option_lines(verbs: list[str]) -> list[str]:
    """The invocations the verb's --help lists (`  --target TARGET`), each line up to its help text."""
    _, text = _parse([*verbs, "--help"])
    return [re.split(r"\s{2,}", line.strip())[0] for line in text.splitlines() if re.match(r"^ {2}-", line)]


def spec_parts(path: Path) -> list[tuple[str, object]]:
    """Every yaml block of the markdown file, parsed, with file:line of its first line."""
    return [
        (f"{path.name}:{block[0][0]}", yaml.safe_load("\n".join(line for _, line in block)))
        for block in fenced_blocks(path, YAML_FENCE)
        if block
    ]


def unknown_keys(part: object, models: list[type[BaseModel]], where: str = "") -> list[str]:
    """The key paths in a part of a spec that no candidate model has; a union needs one member that fits it."""
    if isinstance(part, list):
        return [key for item in part for key in unknown_keys(item, models, where)]
    if not isinstance(part, dict) or not models:
        return []
    tagged = [model for model in models if part.get("type") in typing.get_args(_type_field(model))]
    verdicts = [_unknown_in(part, model, where) for model in tagged or models]
    return min(verdicts, key=len)


def _type_field(model: type[BaseModel]) -> object:
    """The Literal of a union member's `type:` tag (a pruner's), or None."""
    field = model.model_fields.get("type")
    return None if field is None else field.annotation


def _unknown_in(part: dict, model: type[BaseModel], where: str) -> list[str]:
    unknown = []
    for key, value in part.items():
        path = f"{where}.{key}" if where else str(key)
        field = model.model_fields.get(key)
        unknown += [path] if field is None else unknown_keys(value, _models_in(field.annotation), path)
    return unknown


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The models a field may hold, through unions, lists and Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


# ------------------------------------------------------------------------------------------ the tests

FENCED = [command for doc in DOCS for command in fenced_commands(doc)]
INLINE = [fragment for doc in DOCS for fragment in inline_fragments(doc)]
SPEC_PARTS = [part for doc in DOCS for part in spec_parts(doc)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A folder holding runs/lr_mix, a finished sweep: best.json and its optimum's trial config."""
    folder = tmp_path_factory.mktemp("docs")
    write_run(folder / FINISHED_RUN)
    return folder


@pytest.mark.parametrize("command", FENCED, ids=str)
def test_each_command_the_docs_show_is_accepted(command, finished):
    check(command, finished)


@pytest.mark.parametrize("fragment", INLINE, ids=str)
def test_each_sweep_command_named_in_the_text_exists(fragment):
    check_fragment(fragment)


@pytest.mark.parametrize("where, part", SPEC_PARTS, ids=[where for where, _ in SPEC_PARTS])
def test_each_spec_part_the_docs_show_has_only_keys_of_the_spec(where, part):
    assert isinstance(part, dict), f"{where}: a yaml block is a part of a spec, a mapping"
    assert unknown_keys(part, [SweepSpec]) == [], where


def test_a_spec_part_with_a_key_the_spec_lacks_fails():
    assert unknown_keys({"execution": {"gpus": 1, "gpu": 1}}, [SweepSpec]) == ["execution.gpu"]
    assert unknown_keys({"data": {"domain": {"train": "x", "text_feild": "y"}}}, [SweepSpec]) == [
        "data.domain.text_feild"
    ]
    # a union: a Hugging Face rung fits its own member, and a key of neither member is still found
    assert unknown_keys({"ladder": {"rungs": ["xs", {"name": "a", "model": "/m", "max_lr": 1e-3}]}}, [SweepSpec]) == []
    assert unknown_keys({"ladder": {"rungs": [{"name": "a", "model": "/m", "lr": 1e-3}]}}, [SweepSpec]) == [
        "ladder.rungs.lr"
    ]
    assert unknown_keys({"search": {"pruner": {"type": "median", "n_warmup_step": 5}}}, [SweepSpec]) == [
        "search.pruner.n_warmup_step"
    ]
    # a `type:` tag chooses the member: hyperband has no n_startup_trials, though median has
    assert unknown_keys({"search": {"pruner": {"type": "hyperband", "n_startup_trials": 4}}}, [SweepSpec]) == [
        "search.pruner.n_startup_trials"
    ]


def test_the_readme_shows_the_two_commands_that_set_everything_up():
    shown = {shlex.join(command.argv) for command in fenced_commands(REPO / "README.md")}
    assert {"./install.sh", ".venv/bin/sweep run search_spaces/lr_mix.yaml", "./install.sh --test"} <= shown
    assert ".venv/bin/pytest" in shown
    readme = (REPO / "README.md").read_text()
    assert "./install.sh && .venv/bin/sweep run search_spaces/lr_mix.yaml" in readme
    assert "./install.sh --test && .venv/bin/pytest" in readme


def test_the_readme_is_short_enough_to_read_to_the_end():
    """What it is, the two commands, the output, your corpus, promote, and where the rest is: detail goes to docs/."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_a_block_is_read_as_a_shell_reads_it(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n```bash\nexport A=1 B=2   # a comment\n.venv/bin/sweep promote plan runs/lr_mix \\\n"
        '    --target llama3.1-8b && X=1 .venv/bin/pytest -m "not slow"\n```\n'
        "```yaml\nbase: {model: x}\n```\nand `sweep status RUN` inline\n"
    )
    assert [(command.where, command.argv) for command in fenced_commands(doc)] == [
        ("doc.md:3", ("export", "A=1", "B=2")),
        ("doc.md:4", (".venv/bin/sweep", "promote", "plan", "runs/lr_mix", "--target", "llama3.1-8b")),
        ("doc.md:4", ("X=1", ".venv/bin/pytest", "-m", "not slow")),
    ]
    assert [fragment.argv for fragment in inline_fragments(doc)] == [("sweep", "status", "RUN")]


REFUSED = {
    "unknown flag": ("```bash\n.venv/bin/sweep promote plan runs/lr_mix --target x --dry-run\n```", "--dry-run"),
    "0.1 form": ("```bash\n.venv/bin/sweep promote runs/lr_mix --submit\n```", "invalid choice: 'runs/lr_mix'"),
    "unknown verb": ("```bash\n.venv/bin/sweep launch search_spaces/lr_mix.yaml\n```", "invalid choice: 'launch'"),
    "bad value": ("```bash\nsweep trial search_spaces/lr_mix.yaml --lr-fraction 2 --mix 1:1\n```", "--lr-fraction"),
    "missing argument": ("```bash\nsweep jobs logs --allow-remote\n```", "required: job"),
    "missing spec": ("```bash\nsweep run search_spaces/lr_mx.yaml\n```", "search_spaces/lr_mx.yaml"),
    "missing test": ("```bash\n.venv/bin/pytest tests/sweep/test_nothing.py\n```", "tests/sweep/test_nothing.py"),
    "placeholder": ("```bash\n.venv/bin/sweep status runs/<name>\n```", "redirections"),
    "unknown program": ("```bash\nmake sweep\n```", "make is no program"),
    "benchmark flag": ("```bash\n.venv/bin/python benchmarks/trial_loop.py --step 40\n```", "declares no --step"),
    "install flag": ("```bash\n./install.sh --gpu\n```", "declares no --gpu"),
    "timed flag": ("```bash\ntime .venv/bin/sweep run search_spaces/lr_mix.yaml --resume\n```", "--resume"),
    "entry flag": ("```bash\ntorchrun --nnodes 2 -m train_entry.megatron --plan x.json\n```", "declares no --plan"),
    "torchrun flag": ("```bash\ntorchrun --nodes 2 -m train_entry.megatron --config x.json\n```", "torchrun:"),
    "failing run": ("```bash\nsweep promote plan runs/lr_mix --target llama9\n```", "exit code 2"),
    "inline flag of another verb": ("`sweep promote --calibrate`", "sweep promote declares no --calibrate"),
    "inline 0.1 form": ("`sweep promote RUN --dry-run`", "declares no --dry-run"),
    "inline unknown verb": ("`sweep jobs show ID`", "has no verb show"),
    "inline flag of no verb": ("`sweep run SPEC [--name N] [--resume]`", "sweep run declares no --resume"),
}


@pytest.mark.parametrize("doc, named", REFUSED.values(), ids=REFUSED)
def test_a_doc_naming_what_the_tool_does_not_accept_fails(tmp_path, finished, doc, named):
    path = tmp_path / "doc.md"
    path.write_text(doc + "\n")
    commands = fenced_commands(path)
    fragments = inline_fragments(path)
    assert len(commands) + len(fragments) == 1
    with pytest.raises(NotAccepted, match=re.escape(named)):
        check(commands[0], finished) if commands else check_fragment(fragments[0])
