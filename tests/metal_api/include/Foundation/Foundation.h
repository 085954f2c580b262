// The Foundation and Objective-C runtime API the Metal backend uses (see
// ../lucid_apple_doc.h for what the markers mean). Pages are relative to
// https://developer.apple.com/documentation/. These classes date from the first
// macOS releases; their pages were not opened one by one, so every entry is
// LUCID_DOC_FAMILY with the version Apple lists for the class family.
//
// Written instead of using GNUstep's headers: those target the GNUstep
// runtime, while the check parses as macOS (Apple's runtime, ARC, and
// availability checked against the deployment target).
#pragma once
#include "lucid_apple_doc.h"

#pragma clang assume_nonnull begin

// objectivec/objc.h basics. BOOL is `bool` on arm64 Macs, the platform the
// wheels are built for.
typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef bool BOOL;
#ifndef nil
#define nil nullptr
#endif

LUCID_DOC_STRUCTURAL(10.0, "objectivec/nsobject-swift.class")
__attribute__((objc_root_class))
@interface NSObject
+ (instancetype)alloc LUCID_DOC_FAMILY(10.0, "objectivec/nsobject-swift.class/alloc()");
+ (instancetype)new LUCID_DOC_FAMILY(10.0, "objectivec/nsobject-swift.class/new()");
@end

LUCID_DOC_STRUCTURAL(10.0, "foundation/nscopying")
@protocol NSCopying
@end

// for (x in collection) loops.
typedef struct LUCID_DOC_STRUCTURAL(10.5, "foundation/nsfastenumerationstate") NSFastEnumerationState {
  unsigned long state;
  __unsafe_unretained id _Nullable* _Nullable itemsPtr;
  unsigned long* _Nullable mutationsPtr;
  unsigned long extra[5];
} NSFastEnumerationState;

LUCID_DOC_STRUCTURAL(10.5, "foundation/nsfastenumeration")
@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState*)state
                                  objects:(__unsafe_unretained id _Nullable[_Nonnull])buffer
                                    count:(NSUInteger)len
    LUCID_DOC_IMPLICIT(10.5, "foundation/nsfastenumeration/countbyenumerating(with:objects:count:)");
@end

LUCID_DOC_STRUCTURAL(10.0, "foundation/nsstring")
@interface NSString : NSObject
@property(nullable, readonly) const char* UTF8String LUCID_DOC_FAMILY(10.0, "foundation/nsstring/utf8string");
@end

LUCID_DOC_STRUCTURAL(10.0, "foundation/nsvalue")
@interface NSValue : NSObject
@end

LUCID_DOC_FAMILY(10.0, "foundation/nsnumber")
@interface NSNumber : NSValue
+ (NSNumber*)numberWithInt:(int)value LUCID_DOC_IMPLICIT(10.0, "foundation/nsnumber/init(value:)-3jgc4");
+ (NSNumber*)numberWithLongLong:(long long)value LUCID_DOC_FAMILY(10.0, "foundation/nsnumber/init(value:)-4b0fu");
@end

LUCID_DOC_FAMILY(10.0, "foundation/nsarray")
@interface NSArray<__covariant ObjectType> : NSObject <NSFastEnumeration>
+ (instancetype)array LUCID_DOC_FAMILY(10.0, "foundation/nsarray/init()");
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull[_Nonnull])objects
                           count:(NSUInteger)cnt LUCID_DOC_IMPLICIT(10.0, "foundation/nsarray/init(objects:count:)");
@property(readonly) NSUInteger count LUCID_DOC_FAMILY(10.0, "foundation/nsarray/count");
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx
    LUCID_DOC_FAMILY(10.8, "foundation/nsarray/objectatindexedsubscript(_:)");
@end

LUCID_DOC_FAMILY(10.0, "foundation/nsmutablearray")
@interface NSMutableArray<ObjectType> : NSArray<ObjectType>
+ (instancetype)arrayWithCapacity:(NSUInteger)numItems LUCID_DOC_FAMILY(10.0, "foundation/nsmutablearray/init(capacity:)");
- (void)addObject:(ObjectType)anObject LUCID_DOC_FAMILY(10.0, "foundation/nsmutablearray/add(_:)");
@end

LUCID_DOC_STRUCTURAL(10.0, "foundation/nsdictionary")
@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSFastEnumeration>
+ (instancetype)dictionary LUCID_DOC_FAMILY(10.0, "foundation/nsdictionary/init()");
@end

LUCID_DOC_FAMILY(10.0, "foundation/nsmutabledictionary")
@interface NSMutableDictionary<KeyType, ObjectType> : NSDictionary<KeyType, ObjectType>
- (void)setObject:(ObjectType)obj
    forKeyedSubscript:(KeyType<NSCopying>)key
    LUCID_DOC_FAMILY(10.8, "foundation/nsmutabledictionary/setobject(_:forkeyedsubscript:)");
@end

LUCID_DOC_FAMILY(10.0, "foundation/nsdata")
@interface NSData : NSObject
+ (instancetype)dataWithBytes:(nullable const void*)bytes
                       length:(NSUInteger)length LUCID_DOC_FAMILY(10.0, "foundation/nsdata/init(bytes:length:)");
@end

typedef NSString* NSExceptionName LUCID_DOC_STRUCTURAL(10.0, "foundation/nsexceptionname");

LUCID_DOC_FAMILY(10.0, "foundation/nsexception")
@interface NSException : NSObject
@property(readonly, copy) NSExceptionName name LUCID_DOC_FAMILY(10.0, "foundation/nsexception/name");
@property(nullable, readonly, copy) NSString* reason LUCID_DOC_FAMILY(10.0, "foundation/nsexception/reason");
@end

LUCID_DOC_FAMILY(10.0, "foundation/nserror")
@interface NSError : NSObject
@property(readonly, copy) NSString* localizedDescription
    LUCID_DOC_FAMILY(10.0, "foundation/nserror/localizeddescription");
@end

#pragma clang assume_nonnull end
