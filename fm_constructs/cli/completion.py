"""``fmc completion bash``: a bash completion script generated from the argument parser, so it
lists exactly the subcommands and options ``fmc`` has (``source <(fmc completion bash)``)."""

from __future__ import annotations

import argparse


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    )


def _words(parser: argparse.ArgumentParser, path: str, table: dict[str, str]) -> None:
    """``table[path]``: what may follow the words of ``path`` (subcommands and options)."""
    children = _subparsers(parser)
    table[path] = " ".join([*children, *_options(parser)])
    for name, child in children.items():
        _words(child, f"{path} {name}", table)


def bash_script(parser: argparse.ArgumentParser) -> str:
    """A bash ``complete`` function for ``parser``'s program: subcommands, then options."""
    table: dict[str, str] = {}
    _words(parser, parser.prog, table)
    cases = "\n".join(
        f'        "{path}") words="{words}" ;;' for path, words in sorted(table.items())
    )
    prog = parser.prog
    function = f"_{prog.replace('-', '_')}_complete"
    return f"""\
# bash completion for {prog}: source <({prog} completion bash)
{function}() {{
    local cur path="{prog}" word words
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$word" in
            -*) ;;
            *) case " ${{_{prog}_commands[$path]}} " in
                   *" $word "*) path="$path $word" ;;
               esac ;;
        esac
    done
    case "$path" in
{cases}
        *) words="" ;;
    esac
    if [[ "$cur" == -* || -n "$words" ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    fi
    if [[ ${{#COMPREPLY[@]}} -eq 0 ]]; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}}
declare -A _{prog}_commands=(
{_commands_table(parser)}
)
complete -F {function} {prog}
"""


def _commands_table(parser: argparse.ArgumentParser) -> str:
    """``["path"]="subcommand ..."`` lines: which words name a deeper subcommand."""
    lines: list[str] = []

    def walk(node: argparse.ArgumentParser, path: str) -> None:
        children = _subparsers(node)
        lines.append(f'    ["{path}"]="{" ".join(children)}"')
        for name, child in children.items():
            walk(child, f"{path} {name}")

    walk(parser, parser.prog)
    return "\n".join(lines)
