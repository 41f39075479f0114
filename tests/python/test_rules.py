"""The rule table (src/iotune/data/rules.tsv) and its condition language."""

import pytest

from iotune import insights, params, rules

# A run that fires nothing: a shared HDF5 file on ext4, contiguous, collective writes of
# 4 MiB, ROMIO defaults. Each rule's case below changes what makes it fire.
BASE = {
    "ranks": 4, "files": 1, "file_ranks": 4, "file_mode": "shared", "interface": "hdf5",
    "transfer_mode": "independent", "writes": 40, "reads": 0, "bytes_written": 160 << 20,
    "bytes_read": 0, "write_fraction": 1.0, "io_mix": "write", "transfer_size_min": 4 << 20,
    "transfer_size_median": 4 << 20, "transfer_size_max": 4 << 20,
    "small_write_fraction": 0.0, "small_writes": 0, "small_read_fraction": 0.0,
    "small_reads": 0, "access_pattern": "sequential", "backward_fraction": 0.0,
    "gap_fraction": 0.0, "noncontiguous_fraction": 0.0, "file_views": 0, "fs": "ext4",
    "parallel_fs": "no", "file_bytes": 160 << 20, "layout": "contiguous", "filters": "no",
    "fill_time": None, "chunk_bytes_max": None, "chunk_cache_bytes": 1 << 20,
    "chunk_cache_needed": None, "fully_written": "yes", "write_amplification": 1.01,
    "meta_fraction": 0.05, "meta_time_rank_s": 0.01, "imbalance": 1.1, "imbalance_wait_s": 0.0,
    "hint_cb_buffer_size": 16 << 20, "hint_romio_cb_write": "automatic",
    "hint_romio_cb_read": "automatic", "hint_romio_ds_write": "automatic",
    "hint_romio_ds_read": "automatic", "hint_cb_config_list": "*:1",
    "hint_striping_factor": None, "io_time_s": 0.5, "write_excess_bytes": 1 << 20,
    "mpiio_component": "romio",
}  # fmt: skip
SLOW = {"io_time_s": 5.0}  # findings about access need the I/O time they claim to cost
LUSTRE = {"fs": "lustre", "parallel_fs": "yes"}
COLL_SEQ = {"transfer_mode": "collective", "access_pattern": "sequential"}
STRIDED_COLL = {"transfer_mode": "collective", "access_pattern": "strided",
                "noncontiguous_fraction": 1.0}  # fmt: skip
CHUNKED = {"layout": "chunked", "fill_time": "ifset", "chunk_bytes_max": 3 << 20,
           "chunk_cache_needed": 3 << 20}  # fmt: skip
FPP = {"file_mode": "per_process", "files": 4, "file_ranks": 1}
OMPIO_COLL = {**STRIDED_COLL, "interface": "mpiio", "mpiio_component": "ompio",
              "hint_cb_buffer_size": None}  # fmt: skip

# code -> (what makes it fire, a near miss that keeps it quiet)
CASES = {
    "SIO-1": (COLL_SEQ, {**COLL_SEQ, "file_mode": "per_process"}),
    "SIO-2": ({"access_pattern": "random"}, {"access_pattern": "random", **FPP}),
    "SIO-3": (FPP, {**FPP, "interface": "posix"}),
    "SIO-4a": (LUSTRE, {**LUSTRE, "io_mix": "read"}),
    "SIO-4b": ({**LUSTRE, "transfer_size_max": 64 << 20}, {"transfer_size_max": 64 << 20}),
    "SIO-5a": (LUSTRE, {**LUSTRE, "transfer_size_max": 16 << 20}),
    "SIO-5b": ({**LUSTRE, "transfer_size_max": 16 << 20}, LUSTRE),
    "SIO-6": ({**LUSTRE, "transfer_mode": "collective"},
              {**LUSTRE, "transfer_mode": "collective", "hint_cb_config_list": "*:*"}),
    "SIO-7": (COLL_SEQ, {**COLL_SEQ, "hint_romio_cb_write": "disable"}),
    "SIO-8": ({"hint_romio_ds_write": "disable"}, {"hint_romio_ds_write": "automatic"}),
    "SIO-8r": ({"hint_romio_ds_read": "enable"}, {"hint_romio_ds_read": "enable",
                                                  "interface": "posix"}),
    "SIO-9": ({**FPP, **LUSTRE}, {**FPP, "fs": "gpfs", "parallel_fs": "yes"}),
    "SIO-10a": (LUSTRE, {**LUSTRE, "file_bytes": 300 << 20}),
    "SIO-10b": ({**LUSTRE, "file_bytes": 300 << 20}, {**LUSTRE, "file_bytes": 5 << 30}),
    "SIO-10c": ({**LUSTRE, "file_bytes": 5 << 30}, {"file_bytes": 5 << 30}),
    "IOT-1": (CHUNKED, {**CHUNKED, "fully_written": "no"}),
    "IOT-2": ({**CHUNKED, "reads": 8, "io_mix": "mixed", "read_size_mean": 256 << 10},
              {**CHUNKED, "reads": 8, "read_size_mean": 256 << 10, "chunk_cache_bytes": 4 << 20}),
    "IOT-3": (STRIDED_COLL, {**STRIDED_COLL, "hint_cb_buffer_size": 1 << 20}),
    "IOT-4": ({**STRIDED_COLL, "io_mix": "mixed", "reads": 8},
              {**STRIDED_COLL, "io_mix": "mixed", "reads": 8, "hint_romio_cb_read": "disable"}),
    "IOT-5": ({**CHUNKED, "write_amplification": 2.1, "write_excess_bytes": 176 << 20},
              {"write_amplification": 2.1, "write_excess_bytes": 176 << 20}),
    # chunked datasets written in part: the fill explained, never fill time never (IOT-1)
    "IOT-5p": ({**CHUNKED, "fully_written": "no", "write_amplification": 2.3,
                "write_excess_bytes": 3 << 20},
               {**CHUNKED, "fully_written": "yes", "write_amplification": 2.3,
                "write_excess_bytes": 3 << 20}),
    "IOT-5c": ({"write_amplification": 8.0, "write_excess_bytes": 1 << 30},
               {"write_amplification": 8.0, "write_excess_bytes": 4 << 20}),
    "IOT-6": ({"small_write_fraction": 0.96, "small_writes": 100000, **SLOW},
              {"small_write_fraction": 0.96, "small_writes": 10}),
    "IOT-7": ({"small_read_fraction": 0.5, "small_reads": 5000, **SLOW},
              {"small_read_fraction": 0.05, "small_reads": 5000}),
    "IOT-8": ({**FPP, "files": 1024, "ranks": 1024}, FPP),
    "IOT-9": ({"meta_fraction": 0.6, "meta_time_rank_s": 45.0},
              {"meta_fraction": 0.6, "meta_time_rank_s": 2.0}),
    "IOT-10": ({"access_pattern": "random", "interface": "posix", **SLOW},
               {"access_pattern": "random", "interface": "posix",
                "transfer_mode": "collective"}),
    "IOT-11": ({"imbalance": 2.5, "imbalance_wait_s": 4.0},
               {"imbalance": 2.5, "imbalance_wait_s": 4.0, **FPP}),
    "IOT-12": (OMPIO_COLL, {**OMPIO_COLL, "mpiio_component": "romio"}),
    "IOT-12h": ({**OMPIO_COLL, "interface": "hdf5"}, {**OMPIO_COLL, "interface": "hdf5",
                                                     "access_pattern": "sequential"}),
}  # fmt: skip


# near misses that CASES cannot hold (one per rule): what each rule must not fire on
# fires that CASES cannot hold: what each rule must also fire on
MORE_FIRE = [
    # some transfers collective, all sequential (HDF5's ph5example): the collective ones gain
    # nothing from two-phase I/O either
    ("SIO-1", {**COLL_SEQ, "transfer_mode": "mixed"}),
]


@pytest.mark.parametrize(("code", "fire"), MORE_FIRE)
def test_rule_also_fires_on(code, fire):
    rule = next(r for r in rules.all_rules() if r.code == code)
    assert rules.evaluate(rule, {**BASE, **fire}).fired


MORE_QUIET = [
    ("IOT-1", {**CHUNKED, "filters": "yes"}),  # deflate: measured 0.65x with fill time never
    ("IOT-1", {**CHUNKED, "filters": None}),  # unknown filters: not decided
    ("IOT-5", {**CHUNKED, "write_amplification": 2.1, "write_excess_bytes": 3 << 20}),
    (
        "IOT-5p",
        {
            **CHUNKED,
            "fully_written": "no",
            "write_amplification": 1.2,
            "write_excess_bytes": 3 << 20,
        },
    ),
    (
        "IOT-5p",
        {
            **CHUNKED,
            "fully_written": "no",
            "write_amplification": 2.3,
            "write_excess_bytes": 3 << 20,
            "fill_time": "never",
        },
    ),
    ("IOT-6", {"small_write_fraction": 0.96, "small_writes": 100000, "io_time_s": 0.01}),
    ("IOT-7", {"small_read_fraction": 0.5, "small_reads": 5000, "io_time_s": 0.01}),
    # a script the interpreter reads: random, independent, and costs microseconds
    ("IOT-10", {"access_pattern": "random", "interface": "posix", "io_time_s": 0.0002}),
    # sequential, partly collective writes under OMPIO (PnetCDF nonblocking_write): the study
    # kept the defaults (0.98x)
    ("IOT-12", {**OMPIO_COLL, "transfer_mode": "mixed", "access_pattern": "sequential"}),
    # the MPI-IO component unknown (a Darshan log without Open MPI's files): not decided
    ("IOT-12", {**OMPIO_COLL, "mpiio_component": None}),
    # HDF5's collective writes (VORPAL-IO): ROMIO at its defaults was within the noise there
    ("IOT-12", {**OMPIO_COLL, "interface": "hdf5"}),
]


@pytest.mark.parametrize(("code", "quiet"), MORE_QUIET)
def test_rule_stays_quiet_on_what_it_must_not_claim(code, quiet):
    rule = next(r for r in rules.all_rules() if r.code == code)
    assert not rules.evaluate(rule, {**BASE, **quiet}).fired


def test_base_fires_nothing():
    fired = [o.rule.code for o in rules.evaluate_all(BASE) if o.fired]
    assert fired == []


def test_every_rule_has_a_case():
    assert sorted(CASES) == sorted(r.code for r in rules.all_rules())


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fires_and_stays_quiet(code):
    rule = next(r for r in rules.all_rules() if r.code == code)
    fire, quiet = CASES[code]
    assert rules.evaluate(rule, {**BASE, **fire}).fired, f"{code} should fire on {fire}"
    out = rules.evaluate(rule, {**BASE, **quiet})
    assert not out.fired and not out.missing, f"{code} should stay quiet on {quiet}"


def test_settings_are_registry_parameters_with_legal_values():
    for rule in rules.all_rules():
        for name, value in rule.settings:
            p = params.get(name)
            if value.startswith("@"):
                assert insights.BY_NAME[value[1:]].kind in ("size", "count")
            else:
                assert p.normalise(value) == value
        assert rule.kind != "setting" or rule.settings
        assert not rule.online or rule.preserves


def test_conditions_only_name_insights():
    for rule in rules.all_rules():
        for name in rule.needs:
            assert name in insights.BY_NAME, (rule.code, name)


def test_smartio_table2_rules_are_all_there():
    codes = {r.code.rstrip("abcr") for r in rules.all_rules() if r.code.startswith("SIO-")}
    assert codes == {f"SIO-{n}" for n in range(1, 11)}
    for r in rules.all_rules():
        if r.code.startswith("SIO-"):
            assert "SmartIO" in r.source


def test_insight_value_setting_is_resolved_and_normalised():
    rule = next(r for r in rules.all_rules() if r.code == "IOT-2")
    out = rules.evaluate(rule, {**BASE, **CASES["IOT-2"][0]})
    assert out.settings == (("chunk_cache_bytes", str(3 << 20)),)


def test_chunk_cache_not_proposed_for_reads_of_whole_chunks():
    """Each read takes a whole chunk (h5py's dset[...] of a one-chunk dataset): every chunk is
    read once, so a cache that holds one gains nothing (a finding where tune kept defaults)."""
    rule = next(r for r in rules.all_rules() if r.code == "IOT-2")
    partial = {**BASE, **CASES["IOT-2"][0]}
    assert rules.evaluate(rule, partial).fired
    assert not rules.evaluate(rule, {**partial, "read_size_mean": 3 << 20}).fired
    assert rules.evaluate(rule, {**partial, "read_size_mean": (3 << 20) - 1}).fired


def test_unknown_insight_keeps_rule_quiet_and_is_named():
    rule = next(r for r in rules.all_rules() if r.code == "IOT-1")
    out = rules.evaluate(rule, {**BASE, **CHUNKED, "fully_written": None})
    assert not out.fired
    assert out.missing == ("fully_written",)
    # a false comparison decides, whatever is unknown
    out = rules.evaluate(rule, {**BASE, **CHUNKED, "fully_written": None, "fill_time": "never"})
    assert not out.fired and out.missing == ()


@pytest.mark.parametrize(
    "cond, values, expected",
    [
        ("ranks > 2", {"ranks": 4}, True),
        ("ranks > 2", {"ranks": 2}, False),
        ("ranks >= 2 & files <= 1", {"ranks": 2, "files": 1}, True),
        ("file_bytes < 16M", {"file_bytes": (16 << 20) - 1}, True),
        ("file_bytes < 16M", {"file_bytes": 16 << 20}, False),
        ("fs == lustre|gpfs", {"fs": "gpfs"}, True),
        ("fs != lustre|gpfs", {"fs": "gpfs"}, False),
        ("fs != lustre|gpfs", {"fs": "ext4"}, True),
        ("chunk_bytes_max > chunk_cache_bytes", {"chunk_bytes_max": 5, "chunk_cache_bytes": 4},
         True),
        ("hint_cb_config_list == *:1", {"hint_cb_config_list": "*:1"}, True),
        ("meta_fraction >= 0.3", {"meta_fraction": 0.29}, False),
        ("fs == ext4", {"fs": 4}, False),
    ],
)  # fmt: skip
def test_condition_language(cond, values, expected):
    terms = rules.parse_condition(cond)
    results = [rules._term(t, values) for t in terms]
    assert all(results) is expected


@pytest.mark.parametrize(
    "cond, message",
    [
        ("nosuch == 1", "not an insight"),
        ("ranks = 1", "not NAME OP VALUE"),
        ("ranks < a|b", "alternatives only"),
        ("fs < lustre", "needs a number"),
        ("layout == chunkd", "layout is one of contiguous"),
    ],
)
def test_bad_conditions_are_refused(cond, message):
    with pytest.raises(ValueError, match=message):
        rules.parse_condition(cond)


def _table(tmp_path, row):
    text = rules.table_path().read_text(encoding="utf-8")
    header = next(ln for ln in text.splitlines() if ln.startswith("code\t"))
    path = tmp_path / "rules.tsv"
    path.write_text(f"# test\n{header}\n{row}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "settings, message",
    [
        ("nosuch=1", "not a parameter"),
        ("fill_time=sometimes", "not one of"),
        ("cb_buffer_size=@fs", "not a size or count insight"),
    ],
)
def test_bad_settings_name_file_line_and_code(tmp_path, settings, message):
    row = "\t".join(["IOT-99", "setting", "hdf5", "ranks > 1", settings, "write", "yes", "yes",
                     "low", "-", "src", "why"])  # fmt: skip
    path = _table(tmp_path, row)
    with pytest.raises(rules.RuleError, match=rf"rules.tsv:3: IOT-99: .*{message}"):
        rules.read_table(path)


def test_online_rule_must_preserve_data(tmp_path):
    row = "\t".join(["IOT-99", "setting", "hdf5", "ranks > 1", "fill_time=never", "write", "no",
                     "yes", "low", "-", "src", "why"])  # fmt: skip
    with pytest.raises(rules.RuleError, match="only a rule that preserves data"):
        rules.read_table(_table(tmp_path, row))


@pytest.mark.parametrize("online", ["yes", "no"])
def test_an_online_rule_sets_only_parameters_the_registry_lets_the_runtime_apply(tmp_path, online):
    """SIO-1 (transfer_mode) is offline advice; the registry says the parameter is, so a rule
    marked online cannot set it (the adaptive mode would apply it), an offline one can."""
    row = "\t".join(["IOT-99", "setting", "hdf5", "ranks > 1", "transfer_mode=independent", "rw",
                     "yes", online, "low", "-", "src", "why"])  # fmt: skip
    if online == "no":
        assert rules.read_table(_table(tmp_path, row))[0].settings
        return
    with pytest.raises(rules.RuleError, match="sets transfer_mode, which params.tsv says is never"):
        rules.read_table(_table(tmp_path, row))


@pytest.mark.parametrize("online", ["yes", "no"])
def test_a_guarded_parameter_is_set_online_by_its_guarding_rule_alone(tmp_path, online):
    """params.tsv applies fill_time online only where IOT-1's condition (fully_written) holds:
    another rule setting it online would apply fill_time=never without that guard."""
    row = "\t".join(["IOT-99", "setting", "hdf5", "ranks > 1", "fill_time=never", "write", "yes",
                     online, "low", "-", "src", "why"])  # fmt: skip
    if online == "no":
        assert rules.read_table(_table(tmp_path, row))[0].settings
        return
    with pytest.raises(rules.RuleError, match="sets fill_time, which params.tsv applies online"):
        rules.read_table(_table(tmp_path, row))


def test_the_guarding_rule_must_be_online_and_set_its_parameter(tmp_path):
    lines = rules.table_path().read_text().splitlines()
    iot1 = next(ln for ln in lines if ln.startswith("IOT-1\t"))
    cells = iot1.split("\t")
    cells[7] = "no"  # offline: the guard would name a rule the runtime never fires
    with pytest.raises(rules.RuleError, match="guards fill_time by it, so it must be online"):
        rules.read_table(_table(tmp_path, "\t".join(cells)))
    assert rules.read_table(_table(tmp_path, iot1))[0].code == "IOT-1"


def test_every_guard_names_an_online_rule_of_the_runtime_that_sets_the_parameter():
    """The one definition (params.tsv's online column) the runtime (params_gen.h's
    iot_params_guarded) and iotune.rules read; fill_time=never changes the data read back
    where elements are never written, so it goes with IOT-1's fully_written."""
    guarded = {p.name: p.guard for p in params.all_params() if p.guard}
    assert guarded == {"fill_time": "IOT-1"}
    assert params.get("fill_time").online and not params.get("fill_time").offline_why
    table = {r.code: r for r in rules.runtime_rules()}
    for name, code in guarded.items():
        assert table[code].online and name in dict(table[code].settings)
    iot1 = {t.name: t for t in table["IOT-1"].when}
    assert iot1["fully_written"].op == "==" and iot1["fully_written"].values == ("yes",)


def test_every_offline_only_parameter_has_its_reason():
    """The registry's online column: the adaptive mode leaves these out of a knowledge base's
    entry, said with the reason (docs/adaptive.md)."""
    off = {p.name for p in params.all_params() if not p.online}
    assert {"transfer_mode", "romio_no_indep_rw", "coll_metadata_read", "io"} <= off
    assert all(p.offline_why for p in params.all_params() if p.name in off)
    assert {p.name for p in params.all_params() if p.is_mca} <= off
    online = {n for r in rules.all_rules() if r.online for n, _ in r.settings}
    assert not online & off and "romio_cb_write" in online


def test_format_evidence_units():
    rule = next(r for r in rules.all_rules() if r.code == "IOT-6")
    values = {**BASE, "small_write_fraction": 0.96, "small_writes": 100000,
              "access_pattern": "random", "transfer_size_median": 4096}  # fmt: skip
    text = rules.format_evidence(rule, values)
    assert text == "96 % of writes (100000) are below 1 MiB, random offsets, median 4 KiB"


def test_an_imbalance_that_costs_under_a_second_is_no_finding():
    """h5bench's 20-byte CSV, written by rank 0 of a shared open, is 2x imbalanced and costs
    microseconds: not a finding (it was one before the wait counted)."""
    rule = next(r for r in rules.all_rules() if r.code == "IOT-11")
    tiny = {**BASE, "imbalance": 2.0, "imbalance_wait_s": 0.0002}
    assert not rules.evaluate(rule, tiny).fired
    assert rules.evaluate(rule, {**tiny, "imbalance_wait_s": 1.5}).fired
