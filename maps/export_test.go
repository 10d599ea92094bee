package maps

// BucketOf exposes the bucket of a hash map key to the tests.
var BucketOf = (*Map).bucketOf

// SetLocklessTries exposes setLocklessTries to the tests.
var SetLocklessTries = setLocklessTries
