#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that each FILE is well-formed XML with an <svg> root, with python3's xml.etree.
# Without python3 it says the check is skipped and succeeds.
#   xml_check.sh FILE...
set -u
if ! command -v python3 > /dev/null 2>&1; then
  echo "SKIPPED: the XML well-formedness check needs python3, which is not installed"
  exit 0
fi
python3 - "$@" << 'PY'
import sys
import xml.etree.ElementTree as ET
bad = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
        if root.tag != "{http://www.w3.org/2000/svg}svg":
            print("FAIL: %s: the root is %s, not svg" % (path, root.tag))
            bad = 1
    except ET.ParseError as e:
        print("FAIL: %s is not well-formed XML: %s" % (path, e))
        bad = 1
sys.exit(bad)
PY
