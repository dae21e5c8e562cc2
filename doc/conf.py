"""Sphinx configuration of the mbs_dynamics documentation.

Build (offline; it documents the *installed* package, so install it first)::

    pip install ".[doc]"
    sphinx-build -W --keep-going -b html doc build/html
    sphinx-build -W -b doctest doc build/doctest

The repository is deliberately not put on ``sys.path``: autodoc imports the compiled package that
pip installed. Only this folder's ``_ext`` (the documentation's own extension) is added.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import mbs_dynamics  # noqa: E402  (the installed package)

project = "mbs_dynamics"
author = "mbs_dynamics maintainers"
copyright = "mbs_dynamics maintainers"  # noqa: A001
release = version = mbs_dynamics.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "mbs_docs",
]

# MyST Markdown: $…$ math, {math} blocks, ::: fences, anchors for headings (## → #slug)
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]

# autodoc: Google-style docstrings (napoleon); signatures as written; no network, no intersphinx
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes:" as fields: dataclass fields are documented once
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autosummary_generate = False

# doctest: every ```{doctest} / >>> block runs against the installed package
# (the docstrings' examples assume the bundled arm7 as ``robot`` at rest, ``q``)
doctest_global_setup = """
import numpy as np
import mbs_dynamics as mbs
from mbs_dynamics import FeedforwardController, Trajectory, data
np.set_printoptions(precision=6, suppress=True)
robot = mbs.load_urdf(data.robot("arm7"))
q = np.zeros(robot.n)
"""

html_theme = "furo"
html_title = f"mbs_dynamics {release}"
html_static_path = []
