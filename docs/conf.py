"""Sphinx configuration of the reference manual: ``bash scripts/docs.sh`` builds it into
docs/_build/html.  The chapters are the docs/*.md pages (MyST), the reference is read from the
installed package's docstrings (autodoc), the ROS interfaces from msg/ and srv/, the command line
from its argparse parser (docs/_ext/reference.py)."""

import os
import sys

import robot_linearization

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

project = "robot_linearization"
author = "robot_linearization developers"
copyright = "2026, robot_linearization developers"
release = robot_linearization.__version__
version = ".".join(release.split(".")[:2])

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx.ext.viewcode", "reference"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": False}
nitpicky = False

html_theme = "alabaster"
html_title = f"robot_linearization {release}"
html_static_path: list = []
