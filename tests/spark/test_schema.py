"""Arrow <-> Spark types and the exact cast Spark 4.2+ checks (no SparkSession)."""
import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from pyspark.sql import types as T  # noqa: E402

from lancefmt.errors import InvalidArgumentError, UnsupportedFeatureError  # noqa: E402
from lancefmt.spark.schema import (  # noqa: E402
    BatchCaster, arrow_schema, spark_schema, spark_type, write_arrow_schema,
)


@pytest.mark.parametrize("arrow, spark", [
    (pa.uint8(), T.ShortType()), (pa.uint16(), T.IntegerType()), (pa.uint32(), T.LongType()),
    (pa.uint64(), T.DecimalType(20, 0)), (pa.float16(), T.FloatType()),
    (pa.large_string(), T.StringType()), (pa.binary(16), T.BinaryType()),
    (pa.date64(), T.DateType()), (pa.timestamp("ns", "Asia/Tokyo"), T.TimestampType()),
    (pa.timestamp("s"), T.TimestampNTZType()), (pa.duration("ns"), T.DayTimeIntervalType()),
    (pa.list_(pa.float32(), 768), T.ArrayType(T.FloatType(), True)),
    (pa.large_list(pa.field("x", pa.int8(), nullable=False)), T.ArrayType(T.ByteType(), False)),
    (pa.dictionary(pa.int32(), pa.string()), T.StringType()),
    (pa.map_(pa.string(), pa.int64()), T.MapType(T.StringType(), T.LongType(), True)),
    (pa.struct([pa.field("a", pa.int32(), nullable=False)]),
     T.StructType([T.StructField("a", T.IntegerType(), False)])),
])
def test_spark_type(arrow, spark):
    assert spark_type(arrow) == spark


def test_unsupported_types_name_the_column():
    with pytest.raises(UnsupportedFeatureError, match="'big'.*precision 60"):
        spark_schema(pa.schema([pa.field("big", pa.decimal256(60, 0))]))


def test_metadata_columns_are_non_null_longs():
    s = spark_schema(pa.schema([pa.field("a", pa.int32())]), with_row_id=True, with_row_address=True)
    assert [(f.name, f.dataType, f.nullable) for f in s.fields][1:] == [
        ("_rowid", T.LongType(), False), ("_rowaddr", T.LongType(), False)]


def test_caster_output_equals_spark_arrow_schema():
    """The batch Spark gets must equal ``to_arrow_schema(schema)`` exactly (nullability too)."""
    source = pa.schema([pa.field("id", pa.int64(), nullable=False), ("u", pa.uint64()),
                        ("vec", pa.list_(pa.float32(), 2)), ("s", pa.large_string()),
                        ("ts", pa.timestamp("ns", "UTC")), ("_rowid", pa.uint64())])
    batch = pa.RecordBatch.from_pylist(
        [{"id": 1, "u": 2**64 - 1, "vec": [1.0, 2.0], "s": "x", "ts": 1_500, "_rowid": 5}], schema=source)
    spark = spark_schema(pa.schema(list(source)[:-1]), with_row_id=True)
    out = BatchCaster(arrow_schema(spark))(batch)
    assert out.schema.equals(arrow_schema(spark))
    assert out.to_pylist()[0]["vec"] == [1.0, 2.0] and out.column("ts").to_pylist()[0].microsecond == 1


def test_caster_refuses_lossy_casts_and_missing_columns():
    caster = BatchCaster(pa.schema([("small", pa.uint8())]))
    with pytest.raises(UnsupportedFeatureError, match="'small'"):
        caster(pa.record_batch({"small": pa.array([300], pa.int64())}))
    with pytest.raises(InvalidArgumentError, match="lacks column"):
        caster(pa.record_batch({"other": pa.array([1], pa.int64())}))


def test_caster_passes_matching_batches_through():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    batch = pa.record_batch({"a": pa.array(np.arange(3)), "b": pa.array(["x", "y", "z"])})
    assert BatchCaster(schema)(batch) is batch
    reordered = BatchCaster(pa.schema([("b", pa.string()), ("a", pa.int64())]))(batch)
    assert reordered.schema.names == ["b", "a"] and reordered.column("a").to_pylist() == [0, 1, 2]


def test_write_schema_keeps_lance_types_spark_cannot_express():
    existing = pa.schema([pa.field("u", pa.uint64(), metadata={"k": "v"}),
                          pa.field("vec", pa.list_(pa.float32(), 4)), pa.field("n", pa.int32())])
    spark = T.StructType([T.StructField("u", T.DecimalType(20, 0)),
                          T.StructField("vec", T.ArrayType(T.FloatType(), True)),
                          T.StructField("n", T.LongType()), T.StructField("new", T.StringType())])
    out = write_arrow_schema(spark, existing)
    assert [f.type for f in out] == [pa.uint64(), pa.list_(pa.float32(), 4), pa.int64(), pa.string()]
    assert out.field("u").metadata == {b"k": b"v"}
    assert write_arrow_schema(spark).field("u").type == pa.decimal128(20, 0)
