"""How many of the ONNX package's backend node test cases mnnpy passes, with the reasons the
others fail. Run: python benchmarks/onnx_node_tests.py [--verbose]"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from onnx_node_suite import collect_cases, run_case  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--verbose", action="store_true", help="list every failing case")
    args = p.parse_args()
    cases = collect_cases()
    results = {c.name: run_case(c) for c in cases}
    passed = [n for n, r in results.items() if r is None]
    reasons = collections.Counter(r.split(":")[0] for r in results.values() if r is not None)
    print(f"ONNX backend node tests: {len(passed)} of {len(results)} pass")
    for reason, count in reasons.most_common(12):
        print(f"  {count:5d}  {reason}")
    if args.verbose:
        for n, r in sorted(results.items()):
            if r is not None:
                print(f"  {n}: {r}")


if __name__ == "__main__":
    main()
