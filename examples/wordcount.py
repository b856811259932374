"""Count words on executors that k8s_backend runs.

    python examples/wordcount.py                           # a built-in text, pyk8s://local
    python examples/wordcount.py README.md --master pyk8s://https://HOST:6443
    K8S_BACKEND_MASTER=pyk8s:// python examples/wordcount.py /data/book.txt

The file is read on the driver and shipped to executors, so it need not exist inside the pods.
"""

from __future__ import annotations

import argparse
import os
from operator import add

from k8s_backend.spark import session

TEXT = """It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness, it was the epoch of belief, it was the epoch of incredulity"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?", help="a text file (default: a built-in text)")
    parser.add_argument("--master", default=os.environ.get("K8S_BACKEND_MASTER", "pyk8s://local"))
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    if args.file:
        with open(args.file, encoding="utf-8") as source:
            lines = source.read().splitlines()
    else:
        lines = TEXT.splitlines()
    conf = {
        "spark.executor.instances": "2",
        "spark.kubernetes.container.image": os.environ.get("SPARK_IMAGE", "apache/spark:{{SPARK_VERSION}}"),
    }
    spark = session(args.master, conf, app_name="PythonWordCount")
    try:
        counts = (
            spark.sparkContext.parallelize(lines, 4)
            .flatMap(lambda line: line.lower().replace(",", " ").split())
            .map(lambda word: (word, 1))
            .reduceByKey(add)
            .takeOrdered(args.top, key=lambda pair: (-pair[1], pair[0]))
        )
        for word, count in counts:
            print(f"{word}: {count}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
