"""The search default's choice (benchmarks/retrieval_default.py) on synthetic views: the proposal read on the
selection half, its witnesses, and the confirmation half's rule (the rows: benchmarks/tests/conftest.py)."""

from benchmarks.retrieval_default import SEARCH_CANDIDATES, choose_search_default, choose_witnesses, confirm_search_default, propose_search_default


def test_a_search_default_is_chosen_on_selection_and_judged_by_the_rule_on_confirmation(rows):
    out = choose_search_default(rows)
    assert "Selection half (1 views): ['chatterbot-qa']" in out
    chosen = out.split("Proposed on the selection half: ")[1].split("\n")[0]
    assert chosen == "nn_agreement 1."  # the first, fewest-weight candidate is as good as the grid's best here
    assert "Verdict: adopt" in out  # better ρ, more picks within 0.02, never confidently wrong more often
    worse = [dict(r) for r in rows]
    for r in worse[1:]:  # the confirmation views' nn_agreement now backwards too: the rule refuses
        r["raw"] = {**r["raw"], "signals": {**r["raw"]["signals"],
                                            "nn_agreement": r["raw"]["signals"]["task_prior"]}}
    assert "Verdict: not adopted" in choose_search_default(worse)


def test_the_proposal_reads_the_selection_half_only(rows):
    out = choose_search_default(rows[:1])
    assert "Proposed on the selection half: nn_agreement 1." in out
    assert "Verdict" not in out and "not read" in out  # no confirmation view: nothing read there
    # the confirmation views do not change the proposal
    flipped = [rows[0], *({**r, "raw": {**r["raw"], "signals": {**r["raw"]["signals"], "nn_agreement":
                                                                r["raw"]["signals"]["task_prior"]}}}
                          for r in rows[1:])]
    assert propose_search_default(rows[:1])[0] == propose_search_default(
        [r for r in flipped if r["half"] == "selection"])[0]


def test_a_setting_whose_signals_have_no_score_orders_nothing_and_is_not_proposed(rows):
    """rankme has no finite score on a small set: the grid's rankme-only settings order nothing there (ρ counted as
    -1, no pick) instead of stopping the proposal (combine_ranks raises DataError for them)."""
    nan = {k: float("nan") for k in rows[0]["truth"]}
    r = dict(rows[0])
    r["raw"] = {**r["raw"], "signals": {**r["raw"]["signals"], "rankme": nan}}
    setting, lines = propose_search_default([r])
    assert setting == ({"nn_agreement": 1.0}, "mean-rank")
    good = dict(rows[0])
    good["raw"] = {**good["raw"], "signals": {**good["raw"]["signals"], "rankme": dict(good["truth"]),
                                              "nn_agreement": {k: 0.0 for k in good["truth"]}}}
    assert set(propose_search_default([good, r])[0][0]) - {"rankme"}  # not rankme alone: it orders only one


def test_a_richer_setting_is_proposed_only_when_the_few_weight_ones_fall_short(rows, monkeypatch):
    """nn_agreement alone half wrong, the truth only in task_prior + rankme together: no few-weight candidate is as
    good as the grid's best, so the grid's best is proposed."""
    r = dict(rows[0])
    truth = r["truth"]
    order = sorted(truth, key=truth.get)
    half_right = {k: (i if i % 2 else -i) for i, k in enumerate(order)}
    r["raw"] = {**r["raw"], "signals": {"task_prior": {k: truth[k] for k in truth},
                                        "nn_agreement": half_right, "sufficiency": {k: -truth[k] for k in truth},
                                        "rankme": {k: -truth[k] for k in truth},
                                        "modularity": {k: -truth[k] for k in truth}}}
    setting, lines = propose_search_default([r])
    assert setting not in SEARCH_CANDIDATES
    assert setting[0].get("task_prior")
    assert any(line.startswith("| grid best: ") for line in lines)


ORDER = ({"nn_agreement": 1.0, "rankme": 1.0}, "mean-rank")


def test_witnesses_are_chosen_by_fewest_wrong_then_most_right_then_fewest_signals(witness_row):
    setting, lines = choose_witnesses([witness_row], ORDER)
    # none: confidently wrong; task_prior and task_prior + sufficiency: undecided, the best among the leaders
    # (answered right); sufficiency: undecided, the best not among them. Fewest signals: task_prior alone.
    assert setting == (*ORDER, ("task_prior",))
    table = "\n".join(lines)
    assert "| none | none | 1/1 | 1/1 | 0/1 |" in table and "| task_prior | task_prior | 0/1 | 0/1 | 1/1 |" in table
    assert "| sufficiency | sufficiency | 0/1 | 0/1 | 0/1 |" in table
    assert lines[-1] == "\nWitnesses chosen on the selection half: task_prior."


def test_a_signal_the_order_weights_is_no_witness(witness_row):
    order = ({"nn_agreement": 1.0, "rankme": 1.0, "task_prior": 0.01}, "mean-rank")  # still c first
    setting, lines = choose_witnesses([witness_row], order)
    assert "| task_prior | none |" in "\n".join(lines)  # named, not asked: weighted
    assert setting[2] != ("task_prior",)  # it reads as no witness at all, and loses the tie on signals


def test_the_confirmation_reads_the_order_with_the_witnesses_it_carries(witness_row, monkeypatch):
    import benchmarks.default_grid as dg

    monkeypatch.setattr(dg, "default_setting", lambda modality: ({"task_prior": 1.0}, "mean-rank"))
    conf = [{**witness_row, "set": "word-norm", "half": "confirmation"}]
    _, without = confirm_search_default(conf, (*ORDER, ()))
    _, carried = confirm_search_default(conf, (*ORDER, ("task_prior",)))
    assert any("proposed: mean ρ" in x and "confidently wrong 1/1" in x and "answered right 0/1" in x for x in without)
    assert any("proposed: mean ρ" in x and "confidently wrong 0/1" in x and "answered right 1/1" in x for x in carried)
    out = choose_search_default([witness_row, *conf])
    assert "Witnesses chosen on the selection half:" in out and "Proposed: " in out and "Verdict:" in out
