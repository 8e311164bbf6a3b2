"""Arrow tables as pandas frames with every integer kept. pyarrow's own conversion turns an
integer column holding a null into float64, where 9007199254740993 becomes 9007199254740992.0
(two ids can then collide); here such a column takes pandas' nullable integer type, of the
same width and sign. Columns without a null keep numpy's types."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

NULLABLE_INTEGERS = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.UInt8Dtype(),
    pa.uint16(): pd.UInt16Dtype(),
    pa.uint32(): pd.UInt32Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
}


def arrow_frame(table: pa.Table | pa.RecordBatch) -> pd.DataFrame:
    """``table`` as a pandas frame, every value kept (see the module's docstring).

    >>> arrow_frame(pa.table({"id": [2**53 + 1, None]}))["id"].tolist()
    [9007199254740993, <NA>]
    """
    frame = table.to_pandas()
    for field, column in zip(table.schema, table.columns, strict=True):
        if field.type in NULLABLE_INTEGERS and column.null_count and field.name in frame:
            nullable = column.to_pandas(types_mapper=NULLABLE_INTEGERS.get)
            frame[field.name] = nullable.array
    return frame
