package io.tamis.spark;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Stops the native scans of killed tasks. Spark kills a task by marking it interrupted and
 * interrupting its thread, which a thread inside a native batch read does not notice; a
 * selective scan can read for seconds before its next batch. One daemon thread per JVM looks
 * at the running readers' tasks every {@link #PERIOD_MS} ms and cancels the scans of those
 * killed, which stop at their next read.
 */
final class TaskWatch {
    static final long PERIOD_MS = 100;
    private static final Set<TamisColumnarReader> RUNNING = ConcurrentHashMap.newKeySet();
    private static Thread watcher;

    private TaskWatch() {}

    static void add(TamisColumnarReader reader) {
        RUNNING.add(reader);
        start();
    }

    static void remove(TamisColumnarReader reader) {
        RUNNING.remove(reader);
    }

    private static synchronized void start() {
        if (watcher != null) {
            return;
        }
        watcher = new Thread(TaskWatch::watch, "tamis-task-watch");
        watcher.setDaemon(true);
        // Not the first task's class loader, which a long-lived executor would then keep.
        watcher.setContextClassLoader(TaskWatch.class.getClassLoader());
        watcher.start();
    }

    private static void watch() {
        while (true) {
            try {
                Thread.sleep(PERIOD_MS);
            } catch (InterruptedException e) {
                return;
            }
            for (TamisColumnarReader reader : RUNNING) {
                if (reader.task().isInterrupted()) {
                    RUNNING.remove(reader);
                    try {
                        reader.cancel();
                    } catch (Throwable e) {
                        // The scan ended meanwhile: nothing to stop. Never let the watcher die.
                    }
                }
            }
        }
    }
}
