"""MkDocs hooks for the documentation site (mkdocs.yml: hooks).

The changelog at the repository's root is the site's page changelog.md. (The gallery's
notebooks are symbolic links in docs/gallery/ to notebooks/, or their executed copies
written by `abtlab results gallery`; mkdocs-jupyter renders them without executing.)
"""
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def on_files(files, config):
    files.append(File.generated(config, "changelog.md", abs_src_path=str(ROOT / "CHANGELOG.md")))
    return files
