"""The rule table read from C: tools/gen_rules.py's header compiles (warnings as errors) and a C
program walking it sees the same rules, terms and settings (and parameters guarded by a rule)
as the Python package."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import rules

REPO = Path(__file__).resolve().parents[2]
WALK = r"""
#include <stdio.h>
#include "rules_gen.h"
static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
int main(void) {
    printf("v%d %d\n", IOT_INSIGHTS_VERSION, IOT_I_COUNT);
    for (int i = 0; i < IOT_RULE_COUNT; i++) {
        const iot_rule_def *r = &iot_rules[i];
        printf("%s online=%d", r->code, r->online);
        for (int t = 0; t < r->nterms; t++) {
            printf(" [%s %s", iot_insight_names[r->terms[t].insight], ops[r->terms[t].op]);
            for (int v = 0; v < r->terms[t].nvalues; v++) {
                const iot_rule_value *x = &r->terms[t].values[v];
                if (x->is_insight) printf(" %s", iot_insight_names[x->insight]);
                else if (x->word) printf(" %s", x->word);
                else printf(" %.17g", x->number);
            }
            printf("]");
        }
        for (int s = 0; s < r->nsettings; s++) {
            const iot_rule_setting *x = &r->settings[s];
            printf(" %s=%s", iot_params[x->param].name,
                   x->value ? x->value : iot_insight_names[x->from_insight]);
        }
        printf("\n");
    }
    for (int k = 0; iot_params_guarded[k].name; k++)
        printf("guarded %s %s\n", iot_params_guarded[k].name, iot_params_guarded[k].rule);
    return 0;
}
"""


def _python_view() -> str:
    from iotune import insights

    lines = [f"v{insights.VERSION} {len(insights.INSIGHTS)}"]
    for r in rules.runtime_rules():
        parts = [f"{r.code} online={int(r.online)}"]
        for t in r.when:
            vals = [v[1] if isinstance(v, tuple) else f"{v:.17g}" if not isinstance(v, str)
                    else v for v in t.values]  # fmt: skip
            parts.append(f"[{t.name} {t.op} {' '.join(vals)}]")
        parts += [f"{n}={v.lstrip('@')}" for n, v in r.settings]
        lines.append(" ".join(parts))
    # params.tsv's online `guarded: RULE` (params_gen.h's iot_params_guarded, adapt_kb.c)
    from iotune import params

    lines += [f"guarded {p.name} {p.guard}" for p in params.all_params() if p.guard]
    return "\n".join(lines) + "\n"


def test_generated_header_compiles_and_matches(tmp_path):
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    py = sys.executable
    subprocess.run([py, REPO / "tools" / "gen_params.py", REPO / "src" / "iotune" / "data" /
                    "params.tsv", tmp_path / "params_gen.h"], check=True)  # fmt: skip
    subprocess.run([py, REPO / "tools" / "gen_rules.py", tmp_path / "rules_gen.h"], check=True)
    (tmp_path / "walk.c").write_text(WALK)
    exe = tmp_path / "walk"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", tmp_path, "-I",
                    REPO / "runtime" / "src", tmp_path / "walk.c", "-o", exe],
                   check=True)  # fmt: skip
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    assert out == _python_view()


def test_rules_that_set_mca_parameters_stay_offline_and_out_of_the_runtime():
    """IOT-12's io=romio321 (Open MPI's MPI-IO component) is chosen when MPI starts: the
    runtime cannot apply it, and its parameter table has no MCA parameters."""
    held = {r.code for r in rules.runtime_rules()}
    mca = [r for r in rules.all_rules() if any(n == "io" for n, _ in r.settings)]
    assert mca and not any(r.online for r in mca)
    assert not held & {r.code for r in mca}
    assert held == {r.code for r in rules.all_rules()} - {r.code for r in mca}
