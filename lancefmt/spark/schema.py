"""Arrow <-> Spark types, and the exact cast Spark 4.2+ insists on.

Reading: a Lance dataset's Arrow schema becomes a Spark ``StructType`` (:func:`spark_schema`);
Spark then expects every RecordBatch ``read()`` yields to have *exactly*
``to_arrow_schema(schema, timezone="UTC")`` -- same types (no ``large_*``, ``timestamp[us]``,
``list<element>``), same nullability -- and checks it (SPARK-55583). :class:`BatchCaster` turns a
scanned batch into that schema, column by column, passing matching columns through untouched.

Types Spark lacks are widened without loss: unsigned ints to the next signed type (``uint64`` to
``decimal(20, 0)``), ``float16`` to float, ``date64`` to date, fixed-size lists (vectors) and
large types to their plain forms, dictionaries to their values, extension types to their storage.
The row-id / row-address metadata columns (``uint64`` in Lance) are ``long``: their values are
below 2**63 (fragment ids < 2**31).

Writing: :func:`write_arrow_schema` picks the Lance schema for data coming from Spark, keeping an
existing column's Lance type (a vector's fixed-size list, a uint column...) when the Spark column
has exactly the type that Lance type reads as, so a read-transform-overwrite round trip keeps it.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DayTimeIntervalType,
    DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType, NullType, ShortType,
    StringType, StructField, StructType, TimestampNTZType, TimestampType,
)

from ..errors import InvalidArgumentError, UnsupportedFeatureError

try:  # Spark 4.1+
    from pyspark.sql.types import TimeType
except ImportError:  # pragma: no cover - pyspark 4.0
    TimeType = None

ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"
METADATA_COLUMNS = (ROW_ID, ROW_ADDRESS)
SPARK_TIMEZONE = "UTC"


def spark_type(t: pa.DataType) -> DataType:
    """The Spark type a Lance/Arrow column reads as."""
    if isinstance(t, pa.ExtensionType):
        return spark_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type)
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t):
        return ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LongType()
    if pa.types.is_uint64(t):
        return DecimalType(20, 0)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedFeatureError(f"decimal precision {t.precision} is above Spark's 38")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)):
        return BinaryType()
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz is not None else TimestampNTZType()
    if pa.types.is_time(t) and TimeType is not None:
        return TimeType()
    if pa.types.is_duration(t):
        return DayTimeIntervalType()
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return ArrayType(spark_type(t.value_type), containsNull=t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(spark_type(t.key_type), spark_type(t.item_type),
                       valueContainsNull=t.item_field.nullable)
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, spark_type(f.type), nullable=f.nullable)
                           for f in t])
    if pa.types.is_null(t):
        return NullType()
    raise UnsupportedFeatureError(f"no Spark type for Arrow type {t}")


def spark_schema(schema: pa.Schema, *, with_row_id: bool = False,
                 with_row_address: bool = False) -> StructType:
    """The Spark schema of a scan of ``schema`` (plus the metadata columns asked for)."""
    fields = []
    for f in schema:
        try:
            fields.append(StructField(f.name, spark_type(f.type), nullable=f.nullable))
        except UnsupportedFeatureError as e:
            raise UnsupportedFeatureError(f"column {f.name!r}: {e}") from None
    if with_row_id:
        fields.append(StructField(ROW_ID, LongType(), nullable=False))
    if with_row_address:
        fields.append(StructField(ROW_ADDRESS, LongType(), nullable=False))
    return StructType(fields)


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what it compares yielded batches to)."""
    return to_arrow_schema(schema, timezone=SPARK_TIMEZONE)


def _cast_options(target: pa.DataType) -> pc.CastOptions:
    # Sub-microsecond time is below Spark's resolution: truncating it is the conversion itself.
    # Everything else (overflow, decimal/float truncation, bad UTF-8) stays an error.
    return pc.CastOptions(target, allow_time_truncate=True)


def cast_array(arr, target: pa.DataType):
    """``arr`` as ``target`` (exact, except sub-microsecond time)."""
    if arr.type.equals(target):
        return arr
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
        if arr.type.equals(target):
            return arr
    return arr.cast(options=_cast_options(target))


class BatchCaster:
    """Casts batches to one target schema, by column name; remembers which columns need it."""

    def __init__(self, target: pa.Schema):
        self.target = target
        self._plans: dict = {}

    def __reduce__(self):
        return (BatchCaster, (self.target,))

    def _plan(self, schema: pa.Schema):
        key = schema
        plan = self._plans.get(key)
        if plan is None:
            missing = [n for n in self.target.names if schema.get_field_index(n) < 0]
            if missing:
                raise InvalidArgumentError(f"batch lacks column(s) {missing} (has {schema.names})")
            plan = [(schema.get_field_index(f.name), None if schema.field(f.name).type.equals(f.type)
                     else f.type) for f in self.target]
            self._plans[key] = plan
        return plan

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.target):
            return batch
        columns = []
        for (index, cast_to), f in zip(self._plan(batch.schema), self.target):
            col = batch.column(index)
            if cast_to is not None:
                try:
                    col = cast_array(col, cast_to)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise UnsupportedFeatureError(
                        f"column {f.name!r}: cannot convert {col.type} to {cast_to}: {e}") from None
            columns.append(col)
        return pa.RecordBatch.from_arrays(columns, schema=self.target)


def write_arrow_schema(schema: StructType, existing: pa.Schema | None = None) -> pa.Schema:
    """The Lance schema for writing Spark rows of ``schema`` as a new dataset (or overwrite).

    A column that also exists in ``existing`` keeps its Lance type and field metadata when the
    Spark column has exactly the type that Lance type reads as; otherwise Spark's own Arrow type
    is used. Nullability always follows the Spark schema.
    """
    base = arrow_schema(schema)
    if existing is None:
        return base
    fields = []
    for f, sf in zip(base, schema.fields):
        idx = existing.get_field_index(f.name)
        if idx >= 0:
            old = existing.field(idx)
            try:
                same = spark_type(old.type) == sf.dataType
            except UnsupportedFeatureError:
                same = False
            if same:
                f = pa.field(f.name, old.type, nullable=sf.nullable, metadata=old.metadata)
        fields.append(f)
    return pa.schema(fields)
