"""mongodb_version_for_cpu - the MongoDB version choice from real /proc/cpuinfo texts (stdlib unittest)."""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "collections/ansible_collections/syncmesh/edge/plugins/filter"))
from ansible.errors import AnsibleFilterError  # noqa: E402
from mongodb import mongodb_version_for_cpu  # noqa: E402
from mongodb_cpu import cpu_problem, major_version  # noqa: E402  (module_utils, put on sys.path by the filter)

# Abbreviated from a Raspberry Pi 4 (Cortex-A72, ARMv8.0) and a Pi 5 (Cortex-A76, ARMv8.2).
PI4 = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU part\t: 0xd08
"""
PI5 = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU part\t: 0xd0b
"""
X86_AVX = "processor\t: 0\nflags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx avx2\n"
X86_NO_AVX = "processor\t: 0\nflags\t\t: fpu vme sse sse2 ssse3\n"


class MongodbVersionForCpu(unittest.TestCase):
    def test_pi4_gets_4_4_18(self):
        self.assertEqual(mongodb_version_for_cpu(PI4, "arm64")["version"], "4.4.18")

    def test_pi5_gets_7_0(self):
        self.assertEqual(mongodb_version_for_cpu(PI5, "arm64")["version"], "7.0")

    def test_x86_with_avx_gets_7_0(self):
        self.assertEqual(mongodb_version_for_cpu(X86_AVX, "amd64")["version"], "7.0")

    def test_x86_without_avx_is_refused_with_a_fix(self):
        with self.assertRaisesRegex(AnsibleFilterError, "no AVX.*mongodb_version"):
            mongodb_version_for_cpu(X86_NO_AVX, "amd64")

    def test_unsupported_architecture_is_named(self):
        with self.assertRaisesRegex(AnsibleFilterError, "armhf"):
            mongodb_version_for_cpu(PI4, "armhf")

    def test_this_machine(self):
        text = pathlib.Path("/proc/cpuinfo").read_text()
        self.assertIn(mongodb_version_for_cpu(text, "amd64")["version"], {"7.0"})


class CpuProblem(unittest.TestCase):
    """cpu_problem: what the appliance's boot program checks before it starts an official image."""

    def test_4_4_runs_everywhere_offered(self):
        for text, arch in ((PI4, "arm64"), (PI5, "arm64"), (X86_NO_AVX, "amd64")):
            self.assertIsNone(cpu_problem(text, arch, "4.4.18"))

    def test_5_and_later_need_atomics_or_avx(self):
        self.assertRegex(cpu_problem(PI4, "arm64", "7.0"), "ARMv8.2-A.*use 4.4.18")
        self.assertIsNone(cpu_problem(PI5, "arm64", "7.0"))
        self.assertRegex(cpu_problem(X86_NO_AVX, "amd64", "5.0"), "needs AVX")
        self.assertIsNone(cpu_problem(X86_AVX, "amd64", "7.0"))

    def test_the_major_version_of_a_tag(self):
        self.assertEqual(major_version("4.4.18"), 4)
        self.assertEqual(major_version("7.0"), 7)
        with self.assertRaisesRegex(ValueError, "versioned tag"):
            major_version("latest")


if __name__ == "__main__":
    unittest.main()
