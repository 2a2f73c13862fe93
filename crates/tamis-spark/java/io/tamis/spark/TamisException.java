package io.tamis.spark;

/** A tamis error that is neither a bad request nor an unsupported feature (corrupt file, I/O). */
public class TamisException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public TamisException(String message) {
        super(message);
    }
}
