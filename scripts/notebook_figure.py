"""Draw docs/recall-at-k.png, the README's picture: R@k of each retrieval mode on the
QASC questions in eval/qasc-dev.json, as notebooks/03-evaluation.ipynb plots it.

    pip install -e '.[notebook]'
    python scripts/notebook_figure.py                  # all 1,000 questions, about 2 minutes
    python scripts/notebook_figure.py --questions 200 --keep /tmp/qasc.db -o /tmp/r.png

``--keep`` builds the evaluation database at that path and reuses it when run again.
"""

import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from llm_graphrag import evaluate_retrieval  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", default=str(ROOT / "eval" / "qasc-dev.json"))
    parser.add_argument("--questions", type=int, help="only the first N questions")
    parser.add_argument("--keep", help="build the evaluation database here and reuse it")
    parser.add_argument("-o", "--output", default=str(ROOT / "docs" / "recall-at-k.png"))
    args = parser.parse_args()
    report = evaluate_retrieval(
        args.file, ks=range(1, 11), questions=args.questions, database=args.keep
    )
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    report.plot(axes=axes, title="QASC")
    fig.suptitle(
        f"Recall at k per retrieval mode: {report['queries']} QASC questions "
        f"over {report['corpus']} facts",
        fontsize=11,
    )
    fig.tight_layout()
    # Fixed metadata, so the same figures give the same file
    fig.savefig(args.output, dpi=100, metadata={"Software": None})
    print(report.table().caption)
    for row in report.table().to_dicts():
        print(
            f"{row['mode']:<7} R@10 any {row['R@10 any']:.3f}  R@10 both {row['R@10 both']:.3f}"
        )
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
