"""Directives of the reference manual that read the package, so that a page cannot fall behind
it: ``public-api`` documents every name in ``robot_linearization.__all__``, ``ros-interfaces``
renders the package's .msg/.srv files, ``command-line`` renders the CLI's argparse help."""

import glob
import importlib
import inspect
import os

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Generated(SphinxDirective):
    """A directive whose body is reStructuredText made by ``lines()``."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self):
        section = nodes.section()
        section.document = self.state.document
        nested_parse_with_titles(self.state, StringList(self.lines(), source=self.get_source_info()[0]), section)
        return section.children


class PublicApi(_Generated):
    """The names of ``robot_linearization.__all__`` given as the directive's arguments: a class with
    its public members, a function, a module's members.  A name that is not in ``__all__`` is an
    error (test_manual checks that the pages document every name of it)."""

    optional_arguments = 100

    def lines(self):
        package = importlib.import_module("robot_linearization")
        out = []
        for name in self.arguments:
            if name not in package.__all__:
                raise self.error(f"public-api: {name} is not in robot_linearization.__all__")
            obj = getattr(package, name)
            kind = ("automodule" if inspect.ismodule(obj) else "autoclass" if inspect.isclass(obj)
                    else "autofunction")
            target = obj.__name__ if inspect.ismodule(obj) else f"robot_linearization.{name}"
            out += [f".. {kind}:: {target}"]
            if kind != "autofunction":
                out += ["   :members:"]
            out += [""]
        return out


class RosInterfaces(_Generated):
    """Each message and service definition of the package (msg/*.msg, srv/*.srv) as written."""

    def lines(self):
        out = []
        for kind in ("msg", "srv"):
            for path in sorted(glob.glob(os.path.join(ROOT, kind, f"*.{kind}"))):
                name = os.path.splitext(os.path.basename(path))[0]
                title = f"robot_linearization/{kind}/{name}"
                self.env.note_dependency(path)
                # (an absolute path of literalinclude is taken from the manual's source directory)
                include = "/" + os.path.relpath(path, self.env.srcdir)
                out += [title, "-" * len(title), "", f".. literalinclude:: {include}", "   :language: text", ""]
        return out


class CommandLine(_Generated):
    """``robot-linearization``'s help and each subcommand's, as argparse prints them."""

    def lines(self):
        from robot_linearization.cli import command_line_parser

        top = command_line_parser()
        out = []
        os.environ["COLUMNS"] = "100"  # (argparse wraps its help at the terminal's width)
        commands = [(top.prog, top)] + [(f"{top.prog} {name}", sub) for action in top._subparsers._group_actions
                                        for name, sub in action.choices.items()]
        for title, command in commands:
            out += [title, "-" * len(title), "", ".. code-block:: text", ""]
            out += ["   " + line for line in command.format_help().splitlines()] + [""]
        return out


def setup(app):
    app.add_directive("public-api", PublicApi)
    app.add_directive("ros-interfaces", RosInterfaces)
    app.add_directive("command-line", CommandLine)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
