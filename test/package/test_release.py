"""What a release needs: one version everywhere, a changelog bloom reads, the declared license."""

import ast
from pathlib import Path

from catkin_pkg.changelog import get_changelog_from_path
from catkin_pkg.package import parse_package

ROOT = Path(__file__).resolve().parents[2]


def setup_keywords():
    """Return the literal keyword arguments of the `setup()` call in setup.py."""
    tree = ast.parse((ROOT / 'setup.py').read_text())
    call = next(node for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'setup')
    return {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)}


def test_one_version_in_package_xml_setup_py_and_the_changelog():
    package = parse_package(ROOT / 'package.xml')
    package.validate()
    changelog = get_changelog_from_path(ROOT / 'CHANGELOG.rst', package.name)
    versions = [version for version, _, _ in changelog.foreach_version()]
    assert versions and versions[0] == package.version == setup_keywords()['version']
    assert changelog.get_content_of_version(package.version)


def test_license_file_is_the_declared_apache_2_0():
    package = parse_package(ROOT / 'package.xml')
    assert [str(license) for license in package.licenses] == ['Apache-2.0']
    assert setup_keywords()['license'] == 'Apache-2.0'
    text = (ROOT / 'LICENSE').read_text()
    assert 'Apache License' in text and 'Version 2.0, January 2004' in text
    assert 'END OF TERMS AND CONDITIONS' in text
