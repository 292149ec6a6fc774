"""The published SciFact counts reproduce: their exact McNemar p-values, intervals and funnel.

That the counts agree with each other (buckets add up to the claims, discordant pairs link the
correct counts) is what ``load_published`` checks, tested in ``tests/unit/ragstage/test_published.py``.
"""

from ragstage import mcnemar, wilson
from ragstage.fixtures import load_json
from ragstage.report import funnel_from_counts, table_from_counts

PUB = load_json("published", "scifact_run.json")


def test_published_p_values_reproduce():
    for pair in PUB["pairs"]:
        p = mcnemar(pair["fixed"], pair["broken"])
        if pair["published_p"] is None:
            assert p == 1.0
        elif "e" in pair["published_p"]:
            assert f"{p:.0e}" == pair["published_p"]
        else:
            digits = len(pair["published_p"].split(".")[1])
            assert f"{p:.{digits}f}" == pair["published_p"]


def test_published_intervals_and_funnel():
    buckets = {"orig": PUB["pipelines"]["minilm+ce"]["buckets"],
               "revised": PUB["pipelines"]["minilm+ce/revised-prompt"]["buckets"]}
    table = table_from_counts(buckets).set_index(["group", "stage"])
    low, high = table.loc[("revised", "none"), ["low", "high"]]
    assert (round(low, 2), round(high, 2)) == (0.45, 0.56)
    f = funnel_from_counts(buckets).set_index(["group", "stage"])
    assert f.loc[("orig", "generation"), "entered"] == 207
    assert round(f.loc[("revised", "generation"), "rate"], 2) == 0.73
    assert [round(x, 2) for x in wilson(99, 300)] == [0.28, 0.39]
    assert wilson(99, 300)[1] > wilson(107, 300)[0]  # the separate intervals overlap
