#!/usr/bin/env python3
"""The man page's options come from the option tables (src/cli/opt.h).

Every command's option table (src/cli/cmd-*.c) is listed by the hidden
`moeplan --dump-options`. In src/cli/moeplan.1, the OPTIONS subsection of
each command (`.SS NAME`) must hold one `.TP` entry per option of its
table (but --help, which the common list above them gives) whose header
line is the one written here from the table: its short letter, long name
and value name. The paragraph under each header is the manual's own prose.
Each table must also give every long name and short letter once (getopt_long
would silently take the first of two), and never the letters main handles
for every command (-q) or -h for anything but --help.

  tests/cli-docs.py MOEPLAN MAN            exit 1 and list every drift
  tests/cli-docs.py MOEPLAN MAN --update   rewrite the headers from the tables;
                                           an option the page lacks gets an entry
                                           with its help text, to be edited
"""
import subprocess
import sys


def esc(text):
    """roff: a '-' that is not a hyphen."""
    return text.replace("-", "\\-")


def header(letter, name, value):
    """The .TP header of an option, as the page writes it."""
    long = "\\-\\-" + esc(name)
    if letter != "-":
        if value == "-":
            return '.BR \\-%s ", " %s' % (letter, long)
        return '.BR \\-%s ", " %s " \\fI%s\\fR"' % (letter, long, esc(value))
    if value == "-":
        return ".B " + long
    return '.BI %s " %s"' % (long, esc(value))


def tables(moeplan, problems):
    out = subprocess.run([moeplan, "--dump-options"], check=True, capture_output=True,
                         text=True).stdout
    cmds, seen = {}, set()
    for line in out.splitlines():
        cmd, letter, name, value, _complete, text = line.split("\t")
        for key in ((cmd, "--" + name), (cmd, "-" + letter)):
            if key in seen and key[1] != "--":
                problems.append("%s: %s appears twice in the option table" % key)
            seen.add(key)
        if name in ("quiet", "version") or letter == "q" or (letter == "h") != (name == "help"):
            problems.append("%s: --%s (-%s) collides with the options main handles" %
                            (cmd, name, letter))
        if name != "help":
            cmds.setdefault(cmd, []).append((letter, name, value, text.replace("\\n", " ")))
    return cmds


def option_of(line):
    """The long name a header line gives, or None when it is no option header."""
    if not line.startswith((".B ", ".BR ", ".BI ")) or "\\-\\-" not in line:
        return None
    rest = line.split("\\-\\-", 1)[1]
    name = ""
    for ch in rest.replace("\\-", "-"):
        if ch.isalnum() or ch == "-":
            name += ch
        else:
            break
    return name


def sections(lines):
    """{command: (first line, end line)} of the .SS subsections of OPTIONS."""
    found, cur, start, in_options = {}, None, 0, False
    for i, line in enumerate(lines + [".SH END"]):
        if line.startswith((".SS ", ".SH ")) and cur:
            found[cur] = (start, i)
            cur = None
        if line.startswith(".SH "):
            in_options = line.strip() == ".SH OPTIONS"
        elif line.startswith(".SS ") and in_options:
            cur, start = line.split()[1], i + 1
    return found


def check(cmds, lines, update):
    problems = []
    secs = sections(lines)
    additions = {}
    for cmd, opts in cmds.items():
        if cmd not in secs:
            problems.append("moeplan.1: no '.SS %s' in OPTIONS" % cmd)
            continue
        start, end = secs[cmd]
        want = {name: header(letter, name, value) for letter, name, value, _ in opts}
        have = {}
        for i in range(start, end - 1):
            name = option_of(lines[i + 1]) if lines[i] == ".TP" else None
            if name:
                have[name] = i + 1
        for name, i in have.items():
            if name not in want:
                problems.append("moeplan.1:%d: %s --%s is not an option of the table" %
                                (i + 1, cmd, name))
            elif lines[i] != want[name]:
                problems.append("moeplan.1:%d: %s --%s: header\n    %s\n  the table gives\n    %s" %
                                (i + 1, cmd, name, lines[i], want[name]))
                lines[i] = want[name]
        for letter, name, value, text in opts:
            if name not in have:
                problems.append("moeplan.1: %s --%s: no entry in '.SS %s'" % (cmd, name, cmd))
                additions.setdefault(end, []).extend(
                    [".TP", header(letter, name, value), esc(text[0].upper() + text[1:]) + "."])
    for end in sorted(additions, reverse=True):
        lines[end:end] = additions[end]
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    moeplan, man = argv[1], argv[2]
    update = "--update" in argv[3:]
    with open(man, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems = []
    problems += check(tables(moeplan, problems), lines, update)
    if update:
        with open(man, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return 0
    for p in problems:
        print(p)
    if problems:
        print("%d drift(s) from the option tables: run tests/cli-docs.py %s %s --update" %
              (len(problems), moeplan, man))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
