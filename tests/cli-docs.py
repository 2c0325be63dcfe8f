#!/usr/bin/env python3
"""The manual's options are the option tables' (src/cli/opt.h), and the reverse.

Every command's option table (src/cli/cmd-*.c) is listed by the hidden
`moeplan --dump-options`. Each command's page, doc/moeplan-CMD.1.md, must
have in its `# OPTIONS` section one entry per option of its table (but
--help, which moeplan.1.md gives for every command), and no entry for an
option the table lacks. An entry is a header line written here from the
table (its short letter, long name and value name, in markdown):

    **-o**, **--output** *FILE*
    : the manual's own prose (a definition, indented continuation lines)

Every command of `moeplan --help` must have its page, and the page's
OPTIONS must list the same options as `moeplan CMD --help` prints. Each
table must also give every long name and short letter once (getopt_long
would silently take the first of two), and never the letters main handles
for every command (-q) or -h for anything but --help.

  tests/cli-docs.py MOEPLAN DOCDIR            exit 1 and list every drift
  tests/cli-docs.py MOEPLAN DOCDIR --update   rewrite the headers from the tables;
                                              an option a page lacks gets an entry
                                              with its help text, to be edited
"""
import os
import re
import subprocess
import sys


def header(letter, name, value):
    """The header line of an option's entry, as the pages write it."""
    head = "**--%s**" % name
    if letter != "-":
        head = "**-%s**, %s" % (letter, head)
    if value != "-":
        head += " *%s*" % value
    return head


def tables(moeplan, problems):
    out = subprocess.run([moeplan, "--dump-options"], check=True, capture_output=True,
                         text=True).stdout
    cmds, seen = {}, set()
    for line in out.splitlines():
        cmd, letter, name, value, _complete, text = line.split("\t")
        cmds.setdefault(cmd, [])
        for key in ((cmd, "--" + name), (cmd, "-" + letter)):
            if key in seen and key[1] != "--":
                problems.append("%s: %s appears twice in the option table" % key)
            seen.add(key)
        if name in ("quiet", "version") or letter == "q" or (letter == "h") != (name == "help"):
            problems.append("%s: --%s (-%s) collides with the options main handles" %
                            (cmd, name, letter))
        if name != "help":
            cmds[cmd].append((letter, name, value, text.replace("\\n", " ")))
    return cmds


def help_commands(moeplan):
    """The commands `moeplan --help` lists."""
    out = subprocess.run([moeplan, "--help"], check=True, capture_output=True, text=True).stdout
    return re.findall(r"^  ([a-z]+)  ", out.split("Commands:", 1)[1], re.M)


def help_options(moeplan, cmd):
    """The long options `moeplan CMD --help` prints under Options:, but the
    ones main handles for every command."""
    out = subprocess.run([moeplan, cmd, "--help"], check=True, capture_output=True,
                         text=True).stdout
    body = out.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r"^  (?:-\S, )?\s*--([a-z0-9-]+)", body, re.M)
    return [n for n in names if n not in ("help", "quiet", "version")]


def option_of(line):
    """The long name an entry's header line gives, or None."""
    m = re.match(r"^(?:\*\*-[^*]\*\*, )?\*\*--([a-z0-9-]+)\*\*", line)
    return m.group(1) if m else None


def options_section(lines):
    """(first line, end line) of the `# OPTIONS` section, or None."""
    start = next((i + 1 for i, l in enumerate(lines) if l.strip() == "# OPTIONS"), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("# ")), len(lines))
    return start, end


def entry_text(text):
    """A table's help text as a first draft of the entry's prose."""
    return ": " + text[0].upper() + text[1:] + "."


def check_page(cmd, opts, path, lines, listed):
    problems = []
    rel = os.path.join("doc", os.path.basename(path))
    sec = options_section(lines)
    if sec is None:
        problems.append("%s: no '# OPTIONS' section" % rel)
        return problems
    start, end = sec
    want = {name: header(letter, name, value) for letter, name, value, _ in opts}
    have = {}
    for i in range(start, end - 1):
        name = option_of(lines[i])
        if name and lines[i + 1].startswith(": "):
            have[name] = i
    for name, i in have.items():
        if name not in want:
            problems.append("%s:%d: --%s is not an option of %s" % (rel, i + 1, name, cmd))
        elif lines[i] != want[name]:
            problems.append("%s:%d: --%s: header\n    %s\n  the table gives\n    %s" %
                            (rel, i + 1, name, lines[i], want[name]))
            lines[i] = want[name]
    additions = []
    for letter, name, value, text in opts:
        if name not in have:
            problems.append("%s: --%s: no entry in '# OPTIONS'" % (rel, name))
            additions += [header(letter, name, value), entry_text(text), ""]
    # What --help prints is what the page gives (the tables print --help;
    # this catches a help printer that drifts from its table).
    for name in listed:
        if name not in have and name not in want:
            problems.append("%s: %s --help prints --%s, the page does not give it" %
                            (rel, cmd, name))
    for name in have:
        if name not in listed:
            problems.append("%s: --%s is in the page, not in '%s --help'" % (rel, name, cmd))
    if additions:
        at = end
        while at > start and not lines[at - 1].strip():
            at -= 1
        lines[at:at] = [""] + additions[:-1]
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    moeplan, docdir = argv[1], argv[2]
    update = "--update" in argv[3:]
    problems = []
    cmds = tables(moeplan, problems)
    for cmd in help_commands(moeplan):
        if cmd not in cmds:
            problems.append("moeplan --help lists %s, --dump-options does not" % cmd)
    for cmd, opts in cmds.items():
        path = os.path.join(docdir, "moeplan-%s.1.md" % cmd)
        if not os.path.exists(path):
            problems.append("doc/moeplan-%s.1.md: missing (a page per command)" % cmd)
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        found = check_page(cmd, opts, path, lines, help_options(moeplan, cmd))
        problems += found
        if update and found:
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
    if update:
        return 0
    for p in problems:
        print(p)
    if problems:
        print("%d drift(s) from the option tables: run tests/cli-docs.py %s %s --update" %
              (len(problems), moeplan, docdir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
