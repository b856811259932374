"""The README and the docs site: the README's shape, links that resolve, a nav that lists every page, the
generated pages fresh, the site built with warnings as errors, and every command the docs show checked
(each ``k8s-backend`` line parsed by the command's own parsers, each tox env and module run by name
present, each file named there). The ``python`` snippets are run by test_docs_snippets.py."""

from __future__ import annotations

import configparser
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from docs_blocks import DOCS, LANGUAGES, README, ROOT, Block, all_blocks, blocks_of, doc_files
from markdown.extensions.toc import slugify

from k8s_backend.cli import reference
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import check_flags, parse_submit_args
from k8s_backend.cli.main import SUBMIT, build_parser
from k8s_backend.conf import docs as conf_docs

README_MAX_LINES = 200
TEST_COMMAND = "python3 -m pip install tox && python3 -m tox -e py"
TIERS = ("tests/unit", "tests/contract", "tests/e2e", "tests/real", "tests/node")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def tox_envs() -> dict[str, str]:
    """tox.ini's environments and their commands."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini", encoding="utf-8")
    envs = {"py": parser["testenv"]["commands"]}
    for section in parser.sections():
        if section.startswith("testenv:"):
            envs[section.removeprefix("testenv:")] = parser[section].get("commands", "")
    return envs


def pytest_markers() -> set[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    lines = parser["tool:pytest"]["markers"].strip().splitlines()
    return {line.split(":", 1)[0].strip() for line in lines}


# --- the README -----------------------------------------------------------------------------------------


def test_the_readme_is_short_and_keeps_what_a_newcomer_needs() -> None:
    text = readme()
    assert len(text.splitlines()) <= README_MAX_LINES
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Prerequisites",
        "## The two commands",
        "## PySpark on k8s_backend",
        "## Using the backend from Python",
        "## A real node",
        "## Architecture in a few lines",
        "## Headline figures",
        "## Documentation",
    ]
    assert "python3 -m pip install tox && python3 -m tox -e demo" in text
    assert TEST_COMMAND in text
    assert "python3 -m tox -e py -- tests/unit" in text  # one tier by its folder


def shell_commands(text: str) -> list[list[str]]:
    return list(commands(Block(README, 1, "bash", text, None)))


def test_ci_runs_the_readme_test_command_and_builds_the_docs() -> None:
    ci = shell_commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    # pip's own options (--quiet, --upgrade) aside, CI runs the README's command as written
    without_pip_options = [
        [
            word
            for word in command
            if not (command[:4] == ["python3", "-m", "pip", "install"] and word[:2] == "--")
        ]
        for command in ci
    ]
    readme_command = shell_commands(TEST_COMMAND)
    assert any(
        without_pip_options[index : index + len(readme_command)] == readme_command for index in range(len(ci))
    ), f".ci/run does not run {TEST_COMMAND}"
    assert any(
        command[:4] == ["python3", "-m", "tox", "-e"] and "docs" in command[4].split(",") for command in ci
    )
    assert "mkdocs build --strict" in tox_envs()["docs"]


def links(path: Path) -> Iterator[tuple[str, str]]:
    """``(target, anchor)`` of the relative Markdown links of ``path`` outside code."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        yield file, anchor


def anchors(path: Path) -> set[str]:
    """The anchors mkdocs gives the headings of ``path``."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slugify(line.lstrip("#").strip(), "-") for line in text.splitlines() if line.startswith("#")}


def test_every_link_of_the_readme_resolves() -> None:
    found = list(links(README))
    assert len(found) >= 10
    for file, anchor in found:
        target = (ROOT / file).resolve()
        assert target.is_file(), f"README.md links to {file}, which does not exist"
        if anchor:
            assert anchor in anchors(target), f"README.md links to {file}#{anchor}: no such heading"


def test_the_readme_links_to_every_docs_page() -> None:
    linked = {(ROOT / file).resolve() for file, _ in links(README)}
    missing = [
        page.name for page in DOCS.glob("*.md") if page.resolve() not in linked and page.name != "index.md"
    ]
    assert not missing, f"README.md does not link to {missing}"


def test_the_anchor_helper_agrees_with_the_generated_cli_page() -> None:
    # The CLI page links to its own sections; the link check above relies on the same slugs.
    assert "k8s-backend-status" in anchors(DOCS / "cli.md")


# --- the site -------------------------------------------------------------------------------------------


def nav_files(nav: object) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_files(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_files(value)


def test_the_nav_lists_every_page_once() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = list(nav_files(config["nav"]))
    assert sorted(listed) == sorted(page.name for page in DOCS.glob("*.md"))
    assert config["strict"] is True
    assert config["validation"]["anchors"] == "warn"  # strict turns the warning into an error


def test_the_generated_pages_are_fresh() -> None:
    assert conf_docs.main(["--check", str(DOCS / "configuration.md")]) == 0
    assert reference.main(["--check", str(DOCS / "cli.md")]) == 0


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    result = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()
    assert (tmp_path / "site" / "search" / "search_index.json").is_file()


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n[gone](metrics.md#no-such-heading)\n")
    result = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-heading" in result.stderr


# --- the code blocks ------------------------------------------------------------------------------------


def test_every_code_block_says_what_it_is() -> None:
    blocks = all_blocks()
    assert len(blocks) > 20
    for block in blocks:
        assert block.language in LANGUAGES, (
            f"{block.where}: a code block is ```text (output, never run), ```python (a snippet a test "
            f"runs) or ```bash (commands this test checks), not {block.language!r}"
        )
        if block.language != "python":
            assert block.snippet is None, f"{block.where}: only python blocks are snippets"


def test_every_python_snippet_is_run_by_a_test() -> None:
    runner = (ROOT / "tests" / "e2e" / "docs" / "test_docs_snippets.py").read_text(encoding="utf-8")
    for block in all_blocks():
        if block.language == "python":
            assert block.snippet is not None, f"{block.where}: mark it <!-- snippet: NAME --> and run it"
            assert f'snippet("{block.snippet}")' in runner, f"{block.where}: no test runs {block.snippet}"


def commands(block: Block) -> Iterator[list[str]]:
    """The commands of a bash block: continuations joined, comments dropped, split at ``&&`` and ``;``,
    placeholders (``<printed path>``, ``$(hostname -i)``) replaced by a value."""
    text = block.text.replace("\\\n", " ")
    text = re.sub(r"<[^<>]+>", "VALUE", text)
    text = re.sub(r"\$\([^)]*\)", "VALUE", text)
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)  # as a shell: a word starting with # starts a comment
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = ""
        command: list[str] = []
        for token in lexer:
            if token in {"&&", ";", "||"}:
                if command:
                    yield command
                command = []
            else:
                command.append(token)
        if command:
            yield command


def check_submit(args: list[str], where: str) -> None:
    if args and args[-1] == "...":  # "and the rest of your command"
        args = [*args[:-1], "app.py"]
    try:
        parsed = parse_submit_args(args)
        check_flags(parsed)
    except UsageError as error:
        pytest.fail(f"{where}: k8s-backend submit refuses {shlex.join(args)}: {error.message}")
    assert parsed.app or parsed.kill or parsed.status, f"{where}: {shlex.join(args)} names no application"


def check_k8s_backend(args: list[str], where: str) -> None:
    if args[0] == SUBMIT:
        check_submit(args[1:], where)
        return
    try:
        build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"{where}: k8s-backend refuses {shlex.join(args)}")


def check_tox(args: list[str], where: str) -> None:
    assert args[:2] == ["-e", args[1]], f"{where}: tox {shlex.join(args)}"
    envs = tox_envs()
    for env in args[1].split(","):
        assert env in envs, f"{where}: tox.ini has no environment {env}"
    rest = args[3:] if len(args) > 2 and args[2] == "--" else []
    markers = pytest_markers()
    for index, arg in enumerate(rest):
        if index and rest[index - 1] == "-m":
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", arg)) - {"not", "and", "or"}
            assert words <= markers, f"{where}: unknown markers {words - markers}"
        elif arg.startswith("tests/"):
            assert arg in TIERS, f"{where}: {arg} is not a test tier folder"


def check_python(args: list[str], where: str) -> None:
    if args[:4] == ["-m", "pip", "install", "tox"]:
        return
    if args[:2] == ["-m", "tox"]:
        check_tox(args[2:], where)
        return
    assert args[0] == "-m", f"{where}: python {shlex.join(args)}"
    module = args[1]
    assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"
    result = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{where}: python -m {module} --help: {result.stderr}"
    for word in args[2:]:
        if not word.startswith("-"):
            assert word in result.stdout, f"{where}: python -m {module} has no {word}"


def check_kubectl(args: list[str], where: str) -> None:
    assert args[0] in {"apply", "create", "get"}, f"{where}: kubectl {args[0]}"
    for index, arg in enumerate(args):
        if arg == "-f":
            path = ROOT / args[index + 1]
            assert path.is_file(), f"{where}: {args[index + 1]} does not exist"
            assert list(yaml.safe_load_all(path.read_text(encoding="utf-8"))), f"{where}: {path} is empty"


def check_pytest(args: list[str], where: str) -> None:
    """pytest's own options and the k8s_backend plugin's, as ``pytest --help`` lists them."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{where}: pytest --help: {result.stderr}"
    for arg in args:
        if arg.startswith("--"):
            assert arg.split("=")[0] in result.stdout, f"{where}: pytest has no option {arg}"


def check_docker(args: list[str], where: str) -> None:
    """``docker build -f FILE ... .`` of a Dockerfile of this checkout, or ``docker push IMAGE``."""
    if args[:1] == ["push"]:
        assert len(args) == 2 and ":" in args[1], f"{where}: docker push takes one tagged image"
        return
    assert args[:1] == ["build"] and "-f" in args, f"{where}: docker {args}: build -f FILE or push"
    dockerfile = ROOT / args[args.index("-f") + 1]
    assert dockerfile.is_file(), f"{where}: {dockerfile} does not exist"


def check_command(command: list[str], where: str) -> None:
    program, args = command[0], command[1:]
    if program == "k8s-backend":
        check_k8s_backend(args, where)
    elif program in {"python", "python3"}:
        check_python(args, where)
    elif program == "kubectl":
        check_kubectl(args, where)
    elif program == "pyspark":  # spark-submit's options, which `k8s-backend submit` parses the same way
        check_submit([*args, "shell.py"], where)
    elif program == "pytest":
        check_pytest(args, where)
    elif program == "pip":
        assert args[:1] == ["wheel"] and "--no-deps" in args, f"{where}: pip {args}: this checkout's wheel"
    elif program == "docker":
        check_docker(args, where)
    elif program == "export":
        assert all(re.fullmatch(r"[A-Z_]+=\S+", arg) for arg in args), f"{where}: export {args}"
    else:
        pytest.fail(f"{where}: no check for {program!r}: add one here, or show the line as ```text output")


def bash_blocks() -> list[Block]:
    return [block for block in all_blocks() if block.language == "bash"]


@pytest.mark.parametrize("block", bash_blocks(), ids=lambda block: block.where)
def test_every_command_the_docs_show_is_checked(block: Block) -> None:
    found = list(commands(block))
    assert found, f"{block.where}: an empty bash block"
    for command in found:
        check_command(command, block.where)


def test_the_command_check_refuses_what_the_command_refuses() -> None:
    bad = Block(README, 1, "bash", "k8s-backend submit --num-executors 0 app.py\n", None)
    with pytest.raises(pytest.fail.Exception, match="must be a positive whole number"):
        check_command(next(commands(bad)), bad.where)
    with pytest.raises(pytest.fail.Exception, match="k8s-backend refuses"):
        check_command(["k8s-backend", "status", "--no-such-option", "x"], "here")
    with pytest.raises(AssertionError, match="no environment nosuch"):
        check_command(["python3", "-m", "tox", "-e", "nosuch"], "here")
    with pytest.raises(pytest.fail.Exception, match="no check for 'rm'"):
        check_command(["rm", "-rf", "x"], "here")


def test_commands_are_split_as_a_shell_would() -> None:
    block = Block(
        README,
        1,
        "bash",
        "python3 -m pip install tox && python3 -m tox -e py  # all\n"
        "k8s-backend submit --conf a=$(hostname -i) \\\n"
        "  --name 'two words' --archives e.tgz#env app.py  # done\n"
        "export KUBECONFIG=<printed path>; kubectl get pods -w\n",
        None,
    )
    assert list(commands(block)) == [
        ["python3", "-m", "pip", "install", "tox"],
        ["python3", "-m", "tox", "-e", "py"],
        [
            "k8s-backend",
            "submit",
            "--conf",
            "a=VALUE",
            "--name",
            "two words",
            "--archives",
            "e.tgz#env",
            "app.py",
        ],
        ["export", "KUBECONFIG=VALUE"],
        ["kubectl", "get", "pods", "-w"],
    ]


def test_the_tier_folders_the_docs_name_exist() -> None:
    for tier in TIERS[:-1]:  # tests/node comes with the real node
        assert (ROOT / tier).is_dir(), tier


def test_blocks_are_read_with_their_snippet_names(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# T\n\n<!-- snippet: one -->\n```python\nprint(1)\n```\n\n```text\nout\n```\n")
    first, second = blocks_of(page)
    assert (first.line, first.language, first.text, first.snippet) == (4, "python", "print(1)\n", "one")
    assert (second.language, second.snippet) == ("text", None)
    page.write_text("```bash\nnever closed\n")
    with pytest.raises(ValueError, match="never closed"):
        blocks_of(page)


def test_every_doc_file_is_read() -> None:
    assert README in doc_files()
    assert DOCS / "configuration.md" in doc_files()
