"""End-to-end test of `kora report` in a real browser: the built-in candy_mini model is
compiled without measuring (`kora compile --no-measure`), its plan report written
(`kora report`), and the page opened in headless Chromium: after its scripts ran
(--dump-dom) it records no script error, one kernel group per kernel of the manifest and
the slowest kernel's details; a screenshot is a real picture of the page. A missing
artifact is one error line. Without Chromium the test exits 77, which ctest reports as
skipped.

usage: test_report.py PATH_TO_KORA
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import onnx
from onnx import helper

KORA = None
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "models"))
import builtin  # noqa: E402


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def png_pixels(path):
    """The PNG's width, height and its decompressed (still filtered) scanlines."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, width, height, idat = 8, 0, 0, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunk = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        at += 12 + length
    return width, height, zlib.decompress(idat)


class ReportInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.browser = chromium()
        assert cls.browser, "no chromium"
        cls.tmp = tempfile.mkdtemp(prefix="kora-report-")
        cls.env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(cls.tmp, "kernels"),
                       KORA_PROFILE_DB=os.path.join(cls.tmp, "profiles.db"))
        model = helper.make_model(builtin.candy_mini(), producer_name="kora-builtin",
                                  opset_imports=[helper.make_opsetid("", builtin.OPSET)])
        model.ir_version = 8
        cls.model = os.path.join(cls.tmp, "candy_mini.onnx")
        onnx.save(model, cls.model)
        cls.art = os.path.join(cls.tmp, "candy_mini.optimal")
        cls.run_kora("compile", cls.model, "-o", cls.art, "--no-measure")
        cls.html = os.path.join(cls.tmp, "plan.html")
        out = cls.run_kora("report", cls.art, "-o", cls.html, "--iters", "3")
        assert cls.html in out, out
        with open(os.path.join(cls.art, "manifest.json")) as f:
            cls.kernels = len(json.load(f)["kernels"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def run_kora(cls, *args):
        r = subprocess.run([KORA, *args], capture_output=True, text=True, timeout=300, env=cls.env)
        assert r.returncode == 0, f"kora {' '.join(args)}: exit {r.returncode}: {r.stderr}"
        return r.stdout

    def browse(self, *args):
        profile = tempfile.mkdtemp(prefix="chrome-", dir=self.tmp)
        r = subprocess.run([self.browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--user-data-dir=" + profile, *args, "file://" + self.html],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return r.stdout

    def test_page_runs_without_script_errors_and_shows_every_kernel(self):
        dom = self.browse("--dump-dom")
        body = re.search(r"<body([^>]*)>", dom)
        self.assertIsNotNone(body, dom[:500])
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
        self.assertEqual(attrs.get("data-report-errors"), "0",
                         attrs.get("data-report-error-messages"))
        self.assertEqual(attrs.get("data-report-ready"), "1", attrs)
        self.assertEqual(attrs.get("data-graph"), "primitives")
        self.assertEqual(int(attrs["data-kernel-groups"]), self.kernels)
        self.assertEqual(int(attrs["data-kernels"]), self.kernels)
        # The script showed the slowest kernel's details when the page opened.
        self.assertRegex(dom, r'<aside id="details"><h3>Kernel k\d+ of %d</h3>' % self.kernels)
        self.assertIn("implementation", dom)
        # Self-contained: nothing to fetch.
        with open(self.html) as f:
            page = f.read()
        for external in ("http:", "https:", "<link", " src=", "url("):
            self.assertNotIn(external, page)

    def test_screenshot_is_a_picture_of_the_page(self):
        png = os.path.join(self.tmp, "plan.png")
        self.browse("--screenshot=" + png, "--window-size=1200,1600", "--hide-scrollbars")
        self.assertTrue(os.path.exists(png))
        self.assertGreater(os.path.getsize(png), 30000)
        width, height, rows = png_pixels(png)
        self.assertEqual((width, height), (1200, 1600))
        # A blank page filters to (almost) all zeros; text, bars and the graph do not.
        nonzero = len(rows) - rows.count(0)
        self.assertGreater(nonzero / len(rows), 0.01)
        self.assertGreater(len(set(rows)), 100)

    def test_missing_artifact_is_one_error_line(self):
        r = subprocess.run([KORA, "report", os.path.join(self.tmp, "nothing"), "-o",
                            os.path.join(self.tmp, "x.html")],
                           capture_output=True, text=True, timeout=60, env=self.env)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("is not a directory", r.stderr)


if __name__ == "__main__":
    KORA = os.path.abspath(sys.argv.pop(1))
    if not chromium():  # ctest reports the test as skipped (SKIP_RETURN_CODE)
        print("test_report: no chromium here: skipped (scripts/setup.sh installs Debian's "
              "chromium)")
        sys.exit(77)
    unittest.main(verbosity=1)
