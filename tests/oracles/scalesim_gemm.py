"""Run SCALE-Sim itself on GEMMs and print its compute cycles as JSON (one list per case).

Runs in .venv-scalesim (SCALE-Sim needs numpy<2.3): `python scalesim_gemm.py M,N,K,R,C,DF ...`.
SRAMs of 1 MB are large enough that these GEMMs never stall (the test checks that stall
cycles are 0), so compute cycles are the array's alone.
SCALE-Sim 3.0.0's simulator.get_total_cycles() indexes a method instead of calling it, so the
per-layer report is read directly.
"""

import contextlib
import io
import json
import os
import sys
import tempfile

from scalesim.scale_sim import scalesim

CONFIG = """[general]
run_name = oracle

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = 1024
FilterSramSzkB = 1024
OfmapSramSzkB = 1024
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Bandwidth = 10
Dataflow = {dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
"""
LAYOUT = "Layer name, factors and orders,\nL0, 1, 1, 1, 1, 1, 1, 0, 1, 2, 0, 1, 2, 0, 0, 1, 2, 0, 0, 1, 2,\n"


def compute_cycles(m, n, k, rows, cols, dataflow):
    """(compute cycles, stall cycles) of one GEMM layer as SCALE-Sim reports them."""
    work = tempfile.mkdtemp()
    paths = {name: os.path.join(work, name) for name in ("c.cfg", "t.csv", "l.csv")}
    with open(paths["c.cfg"], "w") as f:
        f.write(CONFIG.format(rows=rows, cols=cols, dataflow=dataflow))
    with open(paths["t.csv"], "w") as f:
        f.write(f"Layer, M, N, K,\nL0, {m}, {n}, {k},\n")
    with open(paths["l.csv"], "w") as f:
        f.write(LAYOUT)
    with contextlib.redirect_stdout(io.StringIO()):
        sim = scalesim(
            save_disk_space=True,
            verbose=False,
            config=paths["c.cfg"],
            topology=paths["t.csv"],
            layout=paths["l.csv"],
            input_type_gemm=True,
        )
        sim.run_scale(top_path=work)
    _, total, stall = sim.runner.single_layer_sim_object_list[0].get_compute_report_items()[:3]
    return [int(total), int(stall)]


if __name__ == "__main__":
    cases = [arg.split(",") for arg in sys.argv[1:]]
    print(json.dumps([compute_cycles(*map(int, c[:5]), c[5]) for c in cases]))
