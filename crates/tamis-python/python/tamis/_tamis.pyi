"""Type stubs of the native module; the documented API is in ``tamis/__init__.py``."""

from typing import Any, Dict, List, Optional

__version__: str

class ArrowStream:
    """Record batches behind the Arrow PyCapsule stream interface; can be exported once."""

    def __arrow_c_stream__(self, requested_schema: Optional[Any] = None) -> Any: ...

class Dataset:
    def __init__(self, path: str, storage_options: Optional[Dict[str, str]] = None,
                 metadata_budget: Optional[int] = None) -> None: ...
    def files(self) -> List[str]: ...
    def scan_all(self, options: Dict[str, Any]) -> ArrowStream: ...
    def scan_stream(self, options: Dict[str, Any]) -> ArrowStream: ...
    def explain_json(self, options: Dict[str, Any]) -> str: ...

def scan_all(path: str, options: Dict[str, Any]) -> ArrowStream: ...
def scan_stream(path: str, options: Dict[str, Any]) -> ArrowStream: ...
def explain_json(path: str, options: Dict[str, Any]) -> str: ...
def optimize_json(
    inputs: List[str],
    output: str,
    sort_by: Optional[List[str]] = None,
    bloom_filters: Optional[List[str]] = None,
    page_rows: Optional[int] = None,
    page_bytes: Optional[int] = None,
    row_group_rows: Optional[int] = None,
    compression: Optional[str] = None,
    dictionary: bool = True,
    memory_limit: Optional[int] = None,
    temp_dir: Optional[str] = None,
) -> str: ...
