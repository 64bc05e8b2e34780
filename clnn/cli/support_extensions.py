"""``clnn support --extensions``: the vendor extensions the devices list
(get_supported_extensions), with their operand types and operations by name
("org.clnn.openvx:CONVOLUTION"), and which operations have OpenCL kernels."""

from __future__ import annotations


def extension_rows(cl_device) -> list[dict]:
    """One dict per registered extension: its name, operand types, operations (each with
    whether it has an OpenCL kernel) and whether the reference / OpenCL device lists it."""
    from clnn.kernels import kernel_for
    from hal.extensions import registered_extensions
    from hal.reference.device import ReferenceDevice

    on_reference = {e.name for e in ReferenceDevice().get_supported_extensions()}
    on_cl = {e.name for e in cl_device.get_supported_extensions()}
    rows = []
    for name, reg in sorted(registered_extensions().items()):
        rows.append({
            "name": name, "reference": name in on_reference, "opencl": name in on_cl,
            "operand_types": [{"type": t.type_id, "name": t.name, "is_tensor": t.is_tensor,
                               "byte_size": t.byte_size}
                              for _, t in sorted(reg.operand_types.items())],
            "operations": [{"type": op.type_id, "name": op.name,
                            "opencl_kernel": kernel_for(op) is not None}
                           for _, op in sorted(reg.operations.items())]})
    return rows


def run_extensions_cli(device: str | None = None, as_json: bool = False) -> int:
    from clnn.devices import open_cl_device

    dev = open_cl_device(device)
    rows = extension_rows(dev)
    if as_json:
        import json

        print(json.dumps({"device": dev.name, "extensions": rows}, indent=1))
        return 0
    if not rows:
        print("no vendor extension is registered")
        return 0
    for row in rows:
        where = [n for n in ("reference", "opencl") if row[n]]
        print(f"{row['name']} (listed by: {', '.join(where) or 'no device'})")
        for t in row["operand_types"]:
            kind = "tensor, element" if t["is_tensor"] else "scalar"
            print(f"  operand   {t['type']:5}  {t['name']}  ({kind} of {t['byte_size']} bytes)")
        for op in row["operations"]:
            kernel = "OpenCL kernel" if op["opencl_kernel"] else "reference only (fallback)"
            print(f"  operation {op['type']:5}  {op['name']}  {kernel}")
    return 0
