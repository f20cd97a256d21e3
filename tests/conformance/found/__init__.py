"""Programs ``make fuzz`` found diverging from torch, one test each (none while minikernel agrees)."""
