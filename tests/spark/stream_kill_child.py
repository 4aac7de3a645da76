"""A streaming query in its own process (and JVM), for test_stream_kill: Parquet files in, the
lance sink out, one file per micro-batch, ``availableNow`` (it stops when the input is done).

``python stream_kill_child.py SOURCE CHECKPOINT URI``
"""
import sys


def main(source: str, checkpoint: str, uri: str) -> None:
    from lancefmt.spark import local_session

    spark = local_session("local[2]", "lancefmt-stream-kill", conf={
        "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"})
    query = (spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 1)
             .parquet(source)
             .writeStream.format("lance").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(uri))
    query.awaitTermination()
    print("finished", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
