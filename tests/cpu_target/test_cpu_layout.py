"""The runtime record and the launcher ABI: one declaration, the same layout on both sides."""
import ctypes

import llvmlite.binding as llvm

from kdebug.runtime import record
from kdebug.targets.cpu.layout import LAUNCHER_TYPE, RUNTIME
from kdebug.targets.cpu.target import host_target_machine


def _offsets_in_llvm(struct_type):
    mod = llvm.parse_assembly(f"@x = external global {struct_type}")
    ty = mod.get_global_variable("x").global_value_type
    td = host_target_machine().target_data
    return [td.get_element_offset(ty, k) for k in range(len(struct_type.elements))], td.get_abi_size(ty)


def test_compiled_record_has_the_host_records_layout():
    offsets, size = _offsets_in_llvm(RUNTIME)
    host = [getattr(record.RuntimeRecord, name).offset for name, _ in record.RECORD_FIELDS]
    assert offsets == host
    assert size == ctypes.sizeof(record.RuntimeRecord)


def test_launcher_signature_matches_the_host_prototype():
    assert str(LAUNCHER_TYPE) == "void (i8*, i32*, i64, i64, i8*)"
    assert record.LAUNCHER._argtypes_ == record.LAUNCHER_ARGS
