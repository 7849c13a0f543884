"""Target compiler passes, one per module, each named by its verb.

A pass is a pure function `verb(module, plan, target) -> Plan` that returns the plan unchanged
(the same object) when it has nothing to decide. Each target family's order is declared once,
in its module under hardware_models/families/; hardware_models/pipelines.py runs it.
"""
